"""A gunicorn worker for a controller that serves http and https at once (Pinot's
``controller.access.protocols=http,https``): gunicorn's TLS settings apply to every listener,
so connections accepted on a plain listener are given a view of the config without TLS.
``sprig controller`` names the TLS ports in ``SPRIG_CONTROLLER_TLS_PORTS``."""

from __future__ import annotations

import os

from gunicorn.workers.gthread import ThreadWorker

TLS_PORTS_ENV = "SPRIG_CONTROLLER_TLS_PORTS"


class _PlainConfig:
    """The worker's config as a plain listener's connections see it."""

    is_ssl = False

    def __init__(self, cfg) -> None:
        self._cfg = cfg

    def __getattr__(self, name: str):
        return getattr(self._cfg, name)


class ListenerTlsWorker(ThreadWorker):
    def init_process(self) -> None:
        self._tls_ports = {int(p) for p in os.environ.get(TLS_PORTS_ENV, "").split(",") if p}
        self._plain_cfg = _PlainConfig(self.cfg)
        super().init_process()

    def accept(self, listener) -> None:
        # the connection keeps the config it was created with; only its TLS wrap differs
        if listener.getsockname()[1] in self._tls_ports:
            return super().accept(listener)
        cfg, self.cfg = self.cfg, self._plain_cfg
        try:
            return super().accept(listener)
        finally:
            self.cfg = cfg
