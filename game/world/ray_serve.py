"""``worldloom serve --engine ray``: the world server on Ray Serve, sessions sticky to a replica.

    WORLDLOOM_TOKEN=... worldloom serve --engine ray --replicas 3 --port 8765
    WORLDLOOM_TOKEN=... worldloom play STORY --backend remote --url ws://127.0.0.1:8765

This module needs Ray Serve (``pip install 'worldloom[serve]'``): it builds the Serve
application out of :mod:`game.world.ray_world` (the gateway and world replicas, the
session hand-off) and :class:`game.world.journal.SnapshotBook` (a detached Ray actor),
and runs it from the command line. See docs/backends.md for a cluster, step by step.
"""


import argparse  # no "from __future__ import annotations": FastAPI reads the route signatures at run time
import contextlib
import sys
import time
from dataclasses import asdict
from typing import Any

import ray
from fastapi import FastAPI, Request, WebSocket
from ray import serve
from ray.serve.config import RequestRouterConfig
from starlette.responses import PlainTextResponse

from game.world.journal import SnapshotBook
from game.world.ray_world import NAMESPACE, ROUTER, Gateway, RaySettings, WorldReplica
from game.world.server import ServerConfig, prepare_serve

_ray: Any = ray  # parts of Ray are untyped
_serve: Any = serve
app = FastAPI(title="worldloom gateway", docs_url=None, redoc_url=None, openapi_url=None)


@serve.ingress(app)
class GatewayIngress(Gateway):
    """The gateway as a Serve ingress: ``/ws`` (the wire protocol) and ``/health`` (``ok``)."""

    @app.websocket("/ws")
    async def ws(self, websocket: WebSocket) -> None:
        await self.serve(websocket)

    @app.get("/health")
    async def health(self, request: Request) -> Any:
        return PlainTextResponse("ok")


def autoscaled(settings: RaySettings) -> bool:
    """Whether the world deployment autoscales (``max_replicas`` above ``min_replicas`` and 1)."""
    return settings.max_replicas > max(1, settings.min_replicas)


def build_app(settings: RaySettings) -> Any:
    """The Serve application: the snapshot book (a detached actor), the world deployment and the gateway.

    Call on a driver connected to Ray (``ray.init``); returns what ``serve.run`` takes.
    """
    book_options: dict[str, Any] = {"name": settings.book_name, "namespace": NAMESPACE, "lifetime": "detached",
                                    "get_if_exists": True, "num_cpus": 0}
    _ray.remote(SnapshotBook).options(**book_options).remote(settings.snapshot_dir or None,
                                                              max(3600.0, 2 * settings.config.grace_s))
    per = settings.config.max_sessions
    router: dict[str, Any] = {"request_router_class": ROUTER, "request_router_kwargs": {"num_fallback_replicas": 0}}
    options: dict[str, Any] = {
        "name": "World",
        "ray_actor_options": {"num_cpus": settings.cpus_per_replica, "num_gpus": settings.gpus_per_replica},
        "max_ongoing_requests": 3 * per + 4,  # a session has one call in flight, plus an interrupt and its detach
        "request_router_config": RequestRouterConfig(**router),
        "health_check_period_s": 2.0,
        "graceful_shutdown_wait_loop_s": 0.5,
        "graceful_shutdown_timeout_s": 10.0,
    }
    if autoscaled(settings):
        options["autoscaling_config"] = {
            "min_replicas": settings.min_replicas, "max_replicas": settings.max_replicas,
            "initial_replicas": max(1, settings.min_replicas),
            "target_ongoing_requests": settings.target_sessions or max(1.0, per / 2),
            "upscale_delay_s": 10.0, "downscale_delay_s": 60.0,
        }
    else:
        options["num_replicas"] = settings.replicas
    # the replicas get only what they use, so a change of replica counts is a scale (a drain), not a restart
    every = asdict(settings)
    world = serve.deployment(**options)(WorldReplica).bind(
        {k: every[k] for k in ("backend", "backend_kwargs", "config", "app_name")})
    gateway = serve.deployment(name="Gateway", num_replicas=settings.gateways, max_ongoing_requests=4096,
                               ray_actor_options={"num_cpus": 0.1})(GatewayIngress)
    return gateway.bind(world, {k: every[k] for k in ("config", "retry_s")})


def shutdown(settings: RaySettings) -> None:
    """Delete the application and its snapshot book (the sessions end)."""
    with contextlib.suppress(Exception):
        serve.delete(settings.app_name)
    with contextlib.suppress(Exception):
        _ray.kill(_ray.get_actor(settings.book_name, namespace=NAMESPACE))


def settings_from_args(args: argparse.Namespace, config: ServerConfig, backend: str,
                       backend_kwargs: dict[str, Any], gpus: float) -> RaySettings:
    """:class:`RaySettings` from ``worldloom serve`` options."""
    return RaySettings(backend=backend, backend_kwargs=backend_kwargs, config=config, replicas=max(1, args.replicas),
                       min_replicas=max(0, args.min_replicas), max_replicas=max(0, args.max_replicas),
                       target_sessions=args.target_sessions, gpus_per_replica=gpus,
                       cpus_per_replica=args.cpus_per_replica, gateways=max(1, args.gateways),
                       snapshot_dir=args.snapshot_dir)


def cmd_serve_ray(args: argparse.Namespace) -> int:
    """``worldloom serve --engine ray``: the same checks as the single-process server, then Ray Serve
    until interrupted; returns the exit code (2 for a configuration error)."""
    out = sys.stderr
    plan = prepare_serve(args)
    if isinstance(plan, int):
        return plan
    if args.ray_address:
        _ray.init(address=args.ray_address, namespace=NAMESPACE)
    else:
        _ray.init(namespace=NAMESPACE, include_dashboard=False)
    gpus = args.gpus_per_replica if args.gpus_per_replica >= 0 else (
        1.0 if _ray.cluster_resources().get("GPU", 0) > 0 else 0.0)
    settings = settings_from_args(args, plan.config, plan.backend, plan.backend_kwargs, gpus)
    http: dict[str, Any] = {"host": args.host, "port": args.port}
    if plan.tls:  # Ray Serve's proxy terminates TLS (wss://) itself
        http.update(ssl_certfile=args.tls_cert, ssl_keyfile=args.tls_key)
    _serve.start(http_options=http)
    _serve.run(build_app(settings), name=settings.app_name, route_prefix="/")
    scale = (f"{settings.min_replicas}-{settings.max_replicas} world replicas (autoscaled)" if autoscaled(settings)
             else f"{settings.replicas} world replicas")
    scheme = "wss" if plan.tls else "ws"
    print(f"serving {plan.caps.backend} on Ray Serve: {scheme}://{args.host}:{args.port}/ws, {scale}, "
          f"{settings.gpus_per_replica:g} GPU and at most {plan.config.max_sessions} sessions each", file=out)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        shutdown(settings)
        _serve.shutdown()
    return 0
