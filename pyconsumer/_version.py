"""The package's version, in one place: setuptools reads it (pyproject's dynamic version,
from this file's literal without importing anything), the client reports it to brokers
(ApiVersions client_software_version), the CLI prints it. A leaf: it imports nothing."""

__version__ = "0.1.0"
