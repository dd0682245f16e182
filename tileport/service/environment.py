"""The machine tileport runs on: the doctor's checks, the offline bundle, a local model server. The faces reach the
environment tools (`tileport.exec`, `tileport.offline`, `tileport.local_models`) only through here."""

from __future__ import annotations

from tileport.exec import doctor, offline as bundle
from tileport.exec.doctor import run_checks

__all__ = ["doctor", "bundle", "run_checks", "pack_bundle", "PackOptions", "DEFAULT_PLATFORM", "EndpointInfo",
           "model_server"]


def __getattr__(name: str):
    """The bundle packer and the model server's pieces, imported when first asked for (they are heavy)."""
    if name in ("PackOptions", "DEFAULT_PLATFORM"):
        from tileport.offline import pack

        return getattr(pack, name)
    if name == "pack_bundle":
        from tileport.offline.pack import pack

        return pack
    if name == "EndpointInfo":
        from tileport.local_models.protocol import EndpointInfo

        return EndpointInfo
    if name == "model_server":
        from tileport.local_models import server

        return server
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
