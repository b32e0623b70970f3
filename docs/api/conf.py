"""Sphinx configuration of the API reference: autodoc over the installed cykafka (compiled core included).

Built by scripts/test.sh as `sphinx-build -E -W -b html docs/api build/api` (warnings are errors).
"""

import cykafka

project = "cykafka"
release = cykafka.__version__
extensions = ["sphinx.ext.autodoc"]
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autoclass_content = "both"  # the class docstring, then __init__'s (the config argument)
autodoc_default_options = {"undoc-members": False}
html_theme = "alabaster"
html_title = f"cykafka {release} API reference"
exclude_patterns = ["_build"]
