"""The error the package's public boundary raises for a bad setting: one line that names what is wrong and what
to do. It lives below every other module, so that the core (networks) and the application (config, the CLI) raise
and catch the same class."""


class ConfigError(ValueError):
    """A config value is invalid; the message names the field and what to do."""
