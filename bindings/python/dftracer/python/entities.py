"""pydftracer's entity API (provenance): typed data objects and their relations.

pydftracer 2.0.6 hands these calls to its native module; dftracer 2.2.0 has
no entity support, so there every call returns 0 and writes nothing. Here an
entity is written once per process as a metadata event and events name the
entities they relate to in their args:

- ``declare_entity(type, key, store, uri)`` -> a 64-bit id (FNV-1a of
  ``type`` NUL ``key``, the same in every process) and, the first time, a
  metadata event ``entity`` whose value is ``{"id","type","key","store","uri"}``;
- ``declare_entity_type(type, role, description)`` -> ``entity_type``;
- ``relate_entities(relation, subject, object)`` -> ``entity_relation``
  (entity->entity relations, >= 16);
- an event's relations (``dft_fn.uses/generates/relate``, ``log_event(...,
  relations=)``) -> args ``rel.<relation>`` = the ids as hex strings.

All return 0 / write nothing while tracing is off.
"""
import json
import threading
from enum import IntEnum

from .. import _core

__all__ = ["EntityStore", "EntityRole", "EntityRelation", "EntityID", "entity_id",
           "declare_entity", "declare_entity_type", "relate_entities", "relation_args"]


class EntityStore(IntEnum):
    """Where an entity instance lives (pydftracer's values)."""

    MEMORY = 0
    GPU_MEMORY = 1
    LOCAL_DISK = 2
    PARALLEL_FS = 3
    BURST_BUFFER = 4
    OBJECT_STORE = 5
    DATABASE = 6
    NETWORK = 7
    OTHER = 8


class EntityRole(IntEnum):
    UNKNOWN = 0
    INPUT = 1
    OUTPUT = 2
    INTERMEDIATE = 3
    PARAMETER = 4
    REFERENCE = 5


class EntityRelation(IntEnum):
    """Event->entity relations (< 16) and entity->entity relations (>= 16)."""

    USED = 0
    GENERATED = 1
    INVALIDATED = 2
    UPDATED = 3
    DERIVED_FROM = 16
    REVISION_OF = 17
    CONTAINS = 18
    PART_OF = 19
    SPECIALIZATION_OF = 20
    ALTERNATE_OF = 21
    DEPENDS_ON = 22


EntityID = int  # 64-bit id; 0 means "no entity" (tracing off)

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = (1 << 64) - 1

_lock = threading.Lock()
_declared = set()  # (session path, kind, id): written once per trace file


def entity_id(type, key):
    """FNV-1a 64 of ``type`` NUL ``key`` (UTF-8); never 0."""
    h = _FNV_OFFSET
    for b in f"{type}\0{key}".encode("utf-8", "surrogatepass"):
        h = ((h ^ b) * _FNV_PRIME) & _MASK
    return h or 1


def _write_once(kind, ident, value):
    marker = (_core.trace_path(), kind, ident)
    with _lock:
        if marker in _declared:
            return
        _declared.add(marker)
    _core.metadata(kind, json.dumps(value, separators=(",", ":"), sort_keys=True))


def _enum_name(enum, v):
    try:
        return enum(int(v)).name
    except ValueError:
        return str(int(v))


def declare_entity(type, key, store=EntityStore.MEMORY, uri=""):
    if not _core.enabled():
        return 0
    eid = entity_id(type, key)
    _write_once("entity", eid, {"id": f"{eid:016x}", "type": str(type), "key": str(key),
                                "store": _enum_name(EntityStore, store), "uri": str(uri or "")})
    return eid


def declare_entity_type(type, role=EntityRole.UNKNOWN, description=""):
    if _core.enabled():
        _write_once("entity_type", str(type), {"type": str(type), "role": _enum_name(EntityRole, role),
                                               "description": str(description or "")})


def relate_entities(relation, subject, object):
    if int(relation) < 16 or not subject or not object or not _core.enabled():
        return
    rel = _enum_name(EntityRelation, relation)
    _write_once("entity_relation", (rel, subject, object),
                {"relation": rel, "subject": f"{subject:016x}", "object": f"{object:016x}"})


def relation_args(relations):
    """{relation: [ids]} -> event args {"rel.used": "id,id", ...}."""
    out = {}
    for rel, ids in relations.items():
        ids = [i for i in ids if i]
        if ids:
            out[f"rel.{_enum_name(EntityRelation, rel).lower()}"] = ",".join(f"{i:016x}" for i in ids)
    return out
