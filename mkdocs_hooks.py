"""mkdocs hooks: parts of pages generated from azjax's own records when the site builds, so that they cannot drift.

`<!-- azjax:config-fields -->` on a page becomes the table of every setting of a run (`azjax.config.field_paths`:
the `--section.field` options of `azjax train`, their types, defaults and help).
"""

from __future__ import annotations

CONFIG_FIELDS = "<!-- azjax:config-fields -->"


def on_page_markdown(markdown: str, **_) -> str:
    if CONFIG_FIELDS in markdown:
        markdown = markdown.replace(CONFIG_FIELDS, config_fields_table())
    return markdown


def config_fields_table() -> str:
    """Every field of a run's config as a Markdown table: option, type, default, what it sets."""
    from azjax import config

    rows = ["| option | type | default | what it sets |", "|---|---|---|---|"]
    for path, (kind, default, help_text) in config.field_paths().items():
        name = kind.__name__ if isinstance(kind, type) else str(kind)
        rows.append(f"| `--{path}` | {_cell(name)} | `{default!r}` | {_cell(help_text)} |")
    return "\n".join(rows)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")

