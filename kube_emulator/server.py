""":class:`KubeEmulator`: the emulator as one object — an HTTP server on loopback, the
in-process API for seeding and inspection, fault injection, request counters and the
optional controllers.

    async with KubeEmulator() as emu:
        emu.install_crd(vpa_crd)
        emu.seed(deployment)
        async with emu.api_client() as client:
            scale = await AppsV1Api(client).read_namespaced_deployment_scale("web", "default")
        assert emu.requests.count("get", "deployments/scale") == 1
"""

from __future__ import annotations

import builtins
import dataclasses
import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

import yaml
from aiohttp import web

from kube_emulator import seeding
from kube_emulator.app import ApiHandler, build_app
from kube_emulator.builtin_kinds import BUILTIN_TYPES, CUSTOM_RESOURCE_DEFINITIONS, NAMESPACES
from kube_emulator.clock import Clock, SystemClock
from kube_emulator.crds import CrdRegistrar
from kube_emulator.faults import FaultInjector
from kube_emulator.jsonutil import JsonObject, clone
from kube_emulator.operations import ApiOperations
from kube_emulator.patches import MERGE_PATCH
from kube_emulator.reads import as_dict
from kube_emulator.requestlog import RequestLog
from kube_emulator.resources import ResourceRegistry, ResourceType
from kube_emulator.selectors import parse_label_selector
from kube_emulator.settings import ServerSettings
from kube_emulator.store import ObjectStore, Snapshot

if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient, Configuration

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class Controller(Protocol):
    """Something that runs alongside the API, reading and writing through ``emulator.api``."""

    async def start(self, emulator: KubeEmulator) -> None: ...

    async def stop(self) -> None: ...


class KubeEmulator:
    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Clock | None = None,
        controllers: Iterable[Controller] = (),
        namespaces: Sequence[str] = DEFAULT_NAMESPACES,
        watch_history: int = 1000,
        versions_per_object: int | None = 100,
        bookmark_interval: float = 60.0,
        default_watch_timeout: float = 1800.0,
        watch_buffer: int = 10_000,
        token: str | None = None,
        server_version: str = "v1.33.0",
        request_log_size: int = 100_000,
        seed: int | None = None,
    ) -> None:
        """
        :param port: 0 picks a free port (read it back from :attr:`port` / :attr:`url`).
        :param clock: time source for object timestamps and controllers (see :mod:`.clock`).
        :param watch_history: change events kept per resource; watching from further back is 410.
        :param versions_per_object: object versions kept for :meth:`history` (``None``: all).
        :param token: require ``Authorization: Bearer <token>`` on API requests.
        :param seed: makes generated names, uids and probabilistic faults reproducible.
        """
        self.host = host
        self.port = port
        self.clock: Clock = clock or SystemClock()
        self.store = ObjectStore(watch_history=watch_history, versions_per_object=versions_per_object)
        self.registry = ResourceRegistry(BUILTIN_TYPES)
        self._crd_registrar = CrdRegistrar(self.registry, self.store)
        self.api = ApiOperations(self.store, self.registry, self.clock, random.Random(seed))
        self.faults = FaultInjector(seed)
        self.requests = RequestLog(request_log_size)
        self.settings = ServerSettings(
            bookmark_interval=bookmark_interval,
            default_watch_timeout=default_watch_timeout,
            watch_buffer=watch_buffer,
            token=token,
            server_version=server_version,
        )
        handler = self._handler = ApiHandler(
            self.api, self.faults, self.requests, self.settings, lambda: f"{self.host}:{self.port}"
        )
        self.app = build_app(handler)
        self.controllers: list[Controller] = list(controllers)
        self._runner: web.AppRunner | None = None
        for namespace in namespaces:
            self.api.create(NAMESPACES, None, {"metadata": {"name": namespace}})

    # --- lifecycle -------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._runner is not None

    async def start(self) -> None:
        # handler_cancellation: a client that hangs up cancels its handler, which ends its watch.
        runner = web.AppRunner(self.app, handler_cancellation=True, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        await site.start()
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        for controller in self.controllers:
            await controller.start(self)

    async def stop(self) -> None:
        for controller in reversed(self.controllers):
            await controller.stop()
        if self._runner is not None:
            self.store.close_watchers("the emulator is shutting down")
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> KubeEmulator:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.stop()

    async def add_controller(self, controller: Controller) -> None:
        self.controllers.append(controller)
        if self.running:
            await controller.start(self)

    # --- connecting clients ----------------------------------------------------------------------

    def rotate_token(self, token: str) -> None:
        """Require ``token`` from now on; the previous one is rejected (401) at once — the harshest
        rotation: a real server keeps accepting a rotated service-account token until it expires."""
        self.settings = dataclasses.replace(self.settings, token=token)
        self._handler.settings = self.settings

    def client_configuration(self) -> Configuration:
        """A kubernetes-asyncio ``Configuration`` for this emulator (global defaults untouched)."""
        from kubernetes_asyncio.client import Configuration

        configuration = Configuration(host=self.url)
        if self.settings.token is not None:
            configuration.api_key = {"BearerToken": self.settings.token}
            configuration.api_key_prefix = {"BearerToken": "Bearer"}
        return configuration

    def api_client(self) -> ApiClient:
        """A new kubernetes-asyncio ``ApiClient``; use it as ``async with`` so it gets closed."""
        from kubernetes_asyncio.client import ApiClient

        return ApiClient(configuration=self.client_configuration())

    def kubeconfig(self, *, context: str = "emulator", namespace: str = "default") -> JsonObject:
        user: JsonObject = {"token": self.settings.token} if self.settings.token else {}
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": context, "cluster": {"server": self.url}}],
            "users": [{"name": context, "user": user}],
            "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": namespace}}],
            "current-context": context,
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | Path, **options: str) -> Path:
        """Write a kubeconfig for this emulator, so another process can use ``--kubeconfig``."""
        target = Path(path)
        # Written aside and renamed, so a process polling for the file never reads half of it.
        partial = target.with_name(target.name + ".partial")
        partial.write_text(yaml.safe_dump(self.kubeconfig(**options), sort_keys=False))
        partial.replace(target)
        return target

    # --- in-process object access ----------------------------------------------------------------

    def resource(self, name: str) -> ResourceType:
        """Resolve ``deployments``, ``deploy``, ``Deployment``, ``vpa.autoscaling.k8s.io``…"""
        return self.registry.resolve(name)

    def _type_of(self, obj: JsonObject) -> ResourceType:
        return self.registry.for_object(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))

    def create(self, obj: JsonObject) -> JsonObject:
        """Create with full API semantics (validation, fresh status, 409 if it exists); the
        namespace is created if missing. Returns the stored object."""
        resource_type = self._type_of(obj)
        namespace = (obj.get("metadata") or {}).get("namespace")
        return as_dict(self.api.create(resource_type, namespace, obj, create_namespace=True))

    def seed(self, *objects: JsonObject | Iterable[JsonObject]) -> list[JsonObject]:
        """Create or replace objects as they are given, status included (what tests usually
        want: "a Deployment with 3 ready replicas"). Namespaces are created as needed,
        CustomResourceDefinitions are stored first and take effect at once."""
        flat: list[JsonObject] = []
        for item in objects:
            flat.extend([item] if isinstance(item, dict) else item)
        stored = [self.api.seed(self._type_of(obj), obj) for obj in seeding.crds_first(flat)]
        return [clone(entry.obj) for entry in stored]

    def load_yaml(self, source: str | Path) -> list[JsonObject]:
        """Seed every object in a YAML file (a path) or YAML text (a string containing a newline)."""
        if isinstance(source, Path) or "\n" not in source:
            documents = seeding.load_documents(source)
        else:
            documents = seeding.parse_documents(source)
        return self.seed(documents)

    def install_crd(self, crd: JsonObject | str | Path) -> list[ResourceType]:
        """Install (or replace) a CustomResourceDefinition from a dict, YAML text or a file;
        returns the resource types it serves. Invalid CRDs raise ``ApiError`` (422)."""
        if isinstance(crd, dict):
            documents = [crd]
        elif isinstance(crd, Path) or "\n" not in crd:
            documents = seeding.load_documents(crd)
        else:
            documents = seeding.parse_documents(crd)
        served: list[ResourceType] = []
        for document in documents:
            name = document["metadata"]["name"]
            existing = self.store.get(CUSTOM_RESOURCE_DEFINITIONS.storage_key, "", name)
            if existing is None:
                self.api.create(CUSTOM_RESOURCE_DEFINITIONS, None, document)
            else:
                self.api.update(
                    CUSTOM_RESOURCE_DEFINITIONS,
                    "",
                    name,
                    {
                        **document,
                        "metadata": {
                            **document["metadata"],
                            "resourceVersion": existing.obj["metadata"]["resourceVersion"],
                        },
                    },
                )
            spec = document["spec"]
            served.extend(self.registry.versions_of(spec["group"], spec["names"]["plural"]))
        return served

    def _namespace_for(self, resource_type: ResourceType, namespace: str | None) -> str:
        if not resource_type.namespaced:
            return ""
        return namespace if namespace is not None else "default"

    def get(self, resource: str, name: str, namespace: str | None = None) -> JsonObject | None:
        """A copy of the stored object, or ``None``. ``namespace`` defaults to ``default``."""
        resource_type = self.resource(resource)
        stored = self.store.get(resource_type.storage_key, self._namespace_for(resource_type, namespace), name)
        return as_dict(self.api.present(resource_type, stored)) if stored is not None else None

    def list(
        self, resource: str, namespace: str | None = None, label_selector: str | None = None
    ) -> builtins.list[JsonObject]:
        """Copies of the matching objects (``namespace=None``: all namespaces)."""
        resource_type = self.resource(resource)
        result = self.api.list(resource_type, namespace, parse_label_selector(label_selector))
        return [as_dict(item) for item in result.items]

    def patch(
        self,
        resource: str,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        content_type: str = MERGE_PATCH,
        subresource: str | None = None,
    ) -> JsonObject:
        """Patch with API semantics (as a controller or another client would)."""
        resource_type = self.resource(resource)
        result, _ = self.api.patch(
            resource_type,
            self._namespace_for(resource_type, namespace),
            name,
            content_type,
            patch,
            subresource=subresource,
        )
        return as_dict(result)

    def delete(self, resource: str, name: str, namespace: str | None = None) -> None:
        resource_type = self.resource(resource)
        self.api.delete(resource_type, self._namespace_for(resource_type, namespace), name)

    def history(self, resource: str, name: str, namespace: str | None = None) -> builtins.list[JsonObject]:
        """Every stored version of the object, oldest first (copies), across re-creations."""
        resource_type = self.resource(resource)
        versions = self.store.versions(resource_type.storage_key, self._namespace_for(resource_type, namespace), name)
        return [clone(version) for version in versions]

    def events(
        self,
        namespace: str | None = None,
        *,
        involved_name: str | None = None,
        involved_kind: str | None = None,
        reason: str | None = None,
    ) -> builtins.list[JsonObject]:
        """core/v1 Events (however they were written), optionally filtered."""
        found = []
        for event in self.list("events", namespace):
            involved = event.get("involvedObject") or {}
            if involved_name is not None and involved.get("name") != involved_name:
                continue
            if involved_kind is not None and involved.get("kind") != involved_kind:
                continue
            if reason is not None and event.get("reason") != reason:
                continue
            found.append(event)
        return found

    def compact_watch_history(self, resource: str | None = None) -> None:
        """Forget recorded changes (of one resource or all), so watches from older
        resourceVersions get 410 Expired — what etcd compaction does to a real cluster."""
        self.store.compact(self.resource(resource).storage_key if resource else None)

    def snapshot_etcd(self) -> Snapshot:
        """Every object as it is now (``etcdctl snapshot save``), for :meth:`restore_etcd`."""
        return self.store.snapshot()

    async def restore_etcd(self, snapshot: Snapshot, *, bump_revision: int = 0) -> None:
        """Put ``snapshot`` back as an operator restores etcd and restarts the API servers and the
        controllers (:meth:`ObjectStore.restore <kube_emulator.store.ObjectStore.restore>`): every
        watch ends; without ``bump_revision`` the resourceVersions go back, and a client resuming its
        watch from a later one hears nothing until the store passes it; with it (``etcdutl snapshot
        restore --bump-revision N --mark-compacted``) such a watch is answered 410 Expired."""
        running = self.running
        for controller in reversed(self.controllers) if running else ():
            await controller.stop()
        self.store.restore(snapshot, bump_revision=bump_revision)
        for controller in self.controllers if running else ():
            await controller.start(self)
