"""llmproxy for pytest: per-test cassettes and scenarios served by llmproxy.

The plugin (llmproxy_pytest.plugin) is registered through the `pytest11`
entry point; llmproxy_pytest.client is the control-API client it uses, also
usable on its own.
"""

from .client import BinaryNotFound, Client, ControlError, Proxy, find_binary, sdk_environ

__all__ = ["BinaryNotFound", "Client", "ControlError", "Proxy", "find_binary", "sdk_environ"]
__version__ = "0.1.0"
