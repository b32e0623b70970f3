"""SCRAM's facts (RFC 5802 / RFC 7677 as Kafka uses them), shared by the SASL login (adapters/security.py) and the
Admin's credential calls (cykafka/scram.py): each mechanism's hash, Kafka's iteration bounds, and the one
SaltedPassword function, so a credential this client writes is the one its login proves."""

from __future__ import annotations

import hashlib

SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}  # mechanism -> hashlib name
SCRAM_MIN_ITERATIONS = 4096  # Kafka's ScramMechanism.minIterations: a login refuses fewer (a downgrade)
CREDENTIAL_MAX_ITERATIONS = 16384  # Kafka's ScramMechanism.maxIterations: a broker refuses a credential with more


def salted_password(hash_name: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    """RFC 5802's SaltedPassword, Hi(password, salt, iterations): PBKDF2-HMAC of hash_name. The password's bytes as
    given (UTF-8 of a str, without SASLprep, as Kafka's Java client)."""
    return hashlib.pbkdf2_hmac(hash_name, password, salt, iterations)
