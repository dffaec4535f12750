"""The policy singleton and vhost entities applied to the router's policy engine: from the
config file, from policyDir JSON files at start, and from management at run time (new
connections see a change at once; open ones keep the policy they were granted)."""

from __future__ import annotations

import json
import logging
import os
from typing import Any, Dict, List

from ..config.json_parser import blank_comment_lines
from ..policy import PolicyEngine, PolicyError, parse_vhost
from ..schema import entity_type
from .config_store import ManagedEntity
from .status import bad_request

log = logging.getLogger("qdrouter.POLICY")


class PolicyEffects:
    def __init__(self, router: Any) -> None:
        self.router = router
        self.engine = PolicyEngine()

    def policy_created(self, entity: ManagedEntity) -> None:
        try:
            self.engine.configure(entity.attributes)
        except PolicyError as error:
            raise bad_request(str(error)) from None
        directory = self.engine.policy_dir
        if directory:
            for path, attrs in load_policy_dir(directory):
                created = self.router.store.add(entity_type("vhost"), attrs, path)
                try:
                    self.vhost_created(created)
                except Exception:
                    self.router.store.remove(created)
                    raise
        # Said before the config file's vhost sections are read: only policyDir's are counted.
        log.info("Policy: maxConnections %d, vhost policy %s%s", self.engine.max_connections,
                 "enabled" if self.engine.enable_vhost_policy else "disabled",
                 f", {len(self.engine.vhosts)} vhost(s) from {directory}" if directory else "")

    def vhost_created(self, entity: ManagedEntity) -> None:
        attrs = dict(entity.attributes)
        attrs.setdefault("hostname", entity.name)
        try:
            self.engine.set_vhost(parse_vhost(attrs))
        except PolicyError as error:
            raise bad_request(str(error)) from None
        entity.attributes.setdefault("hostname", attrs["hostname"])

    def vhost_updated(self, entity: ManagedEntity, changes: Dict[str, Any]) -> None:
        merged = dict(entity.attributes)
        merged.update(changes)
        if merged.get("hostname") != entity.attributes.get("hostname"):
            raise bad_request("vhost: attribute 'hostname' cannot be changed by update")
        try:
            self.engine.set_vhost(parse_vhost(merged))
        except PolicyError as error:
            raise bad_request(str(error)) from None
        entity.attributes.update(changes)

    def vhost_deleted(self, entity: ManagedEntity) -> None:
        self.engine.remove_vhost(str(entity.attributes.get("hostname") or entity.name))

    def policy_row(self, configured: Dict[str, Any]) -> Dict[str, Any]:
        row = dict(configured)
        row.update(self.engine.totals.row())
        return row

    def vhost_stats_rows(self) -> List[Dict[str, Any]]:
        rows = self.engine.vhost_rows()
        for row in rows:
            row["type"] = "org.apache.qpid.dispatch.vhostStats"
        return rows


def load_policy_dir(directory: str) -> List[tuple]:
    """(file, vhost attributes) for every vhost in the directory's *.json files, in name order.

    A file holds a JSON list of ["vhost", {attributes}] pairs (qdrouterd's format) or of
    attribute maps, with whole-line '#' comments as qdrouterd allows; anything else is an error
    naming the file."""
    if not os.path.isabs(directory):
        raise bad_request(f"policy: policyDir: {directory!r} must be an absolute path")
    try:
        names = sorted(name for name in os.listdir(directory) if name.endswith(".json"))
    except OSError as error:
        raise bad_request(f"policy: policyDir: cannot read {directory!r}: {error.strerror}") from None
    found = []
    for name in names:
        path = os.path.join(directory, name)
        where = f"policy: policyDir: {path}"
        try:
            with open(path, encoding="utf-8") as handle:
                document = json.loads(blank_comment_lines(handle.read()))
        except (OSError, ValueError) as error:
            raise bad_request(f"policy: policyDir: {path}: not readable JSON: {error}") from None
        if isinstance(document, dict):
            document = [document]
        if not isinstance(document, list):
            raise bad_request(f"policy: policyDir: {path}: expected a list of vhost definitions")
        for index, item in enumerate(document):
            if isinstance(item, list) and len(item) == 2 and isinstance(item[1], dict):
                if item[0] != "vhost":
                    raise bad_request(f"{where}: entry {index}: only 'vhost' entities belong here, "
                                      f"got {item[0]!r}")
                item = item[1]
            if not isinstance(item, dict):
                raise bad_request(f"policy: policyDir: {path}: entry {index}: expected a vhost map")
            attrs = dict(item)
            if "hostname" not in attrs and isinstance(attrs.get("id"), str):
                attrs["hostname"] = attrs.pop("id")
            if not isinstance(attrs.get("hostname"), str):
                raise bad_request(f"{where}: entry {index}: a vhost needs 'hostname' (or 'id')")
            attrs.setdefault("name", attrs["hostname"])
            found.append((f"{path}:{index}", attrs))
    return found
