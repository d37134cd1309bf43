"""A Protobuf schema across two files for the Protobuf tests, its messages, and the protobuf
runtime's reading of them in the shape Spark's ``from_protobuf`` gives (the second oracle).

``shop/order.proto`` imports ``shop/common.proto`` (a message and an enum: a registry reference)
and the well-known Timestamp and wrappers; ``Order`` is its second message (message index
``[1]``) and has a nested message, a nested enum, repeated scalars (packed) and messages, maps,
a oneof and every scalar wire type.
"""
from __future__ import annotations

import datetime
from typing import Any

COMMON_PROTO = """\
syntax = "proto3";
package shop.common;

message Money {
  string currency = 1;
  int64 units = 2;
  int32 nanos = 3;
}

enum Status {
  STATUS_UNKNOWN = 0;
  STATUS_NEW = 1;
  STATUS_PAID = 2;
  STATUS_SHIPPED = 3;
}
"""

ORDER_PROTO = """\
syntax = "proto3";
package shop;

import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "shop/common.proto";

message Header {
  string source = 1;
}

message Order {
  enum Channel {
    CHANNEL_WEB = 0;
    CHANNEL_SHOP = 1;
    CHANNEL_PHONE = 2;
  }
  message Line {
    string sku = 1;
    uint32 qty = 2;
    shop.common.Money unit_price = 3;
  }
  int64 id = 1;
  string item = 2;
  shop.common.Money price = 3;
  repeated string tags = 4;
  map<string, int32> counts = 5;
  shop.common.Status status = 6;
  oneof payment {
    string card = 7;
    int64 voucher = 8;
  }
  google.protobuf.Timestamp created = 9;
  google.protobuf.Int32Value quantity = 10;
  google.protobuf.StringValue note = 11;
  repeated Line lines = 12;
  Channel channel = 13;
  bytes blob = 14;
  double ratio = 15;
  float weight = 16;
  bool gift = 17;
  sint32 delta = 18;
  sint64 delta64 = 19;
  uint64 big = 20;
  fixed32 f32 = 21;
  fixed64 f64 = 22;
  sfixed32 sf32 = 23;
  sfixed64 sf64 = 24;
  int32 small = 25;
  repeated int64 readings = 26;
  map<int64, shop.common.Money> prices = 27;
}
"""

#: import path -> text, what compile_protos takes
PROTOS = {"shop/common.proto": COMMON_PROTO, "shop/order.proto": ORDER_PROTO}
MESSAGE = "shop.Order"
#: Order's place in its file: the message-index array the serializer writes
ORDER_INDEX = [1]


def orders(classes: dict[str, Any], count: int, *, start: int = 0) -> list[Any]:
    """``count`` Orders, each different: empty ones (every field at its default), each oneof
    member and none, set-but-zero wrappers, negative and extreme numbers, non-ASCII text."""
    order_cls = classes[MESSAGE]
    out = []
    for i in range(start, start + count):
        m = order_cls()
        if i % 11 == 5:
            out.append(m)                        # nothing on the wire: every field's default
            continue
        m.id = i * 1_000_003 - 7
        m.item = f"item-{i}" + ("ü€😀" if i % 3 == 0 else "")
        if i % 4 != 1:
            m.price.currency = "EUR" if i % 2 else "JPY"
            m.price.units = i * 3 - 40
            m.price.nanos = (i * 7919) % 1_000_000_000
        m.tags.extend(f"t{j}" for j in range(i % 4))
        for j in range(i % 3):
            m.counts[f"k{j}"] = j * i - 5
        m.status = i % 4
        if i % 3 == 0:
            m.card = f"card-{i}"
        elif i % 3 == 1:
            m.voucher = -i if i % 2 else i
        if i % 5 != 2:
            m.created.seconds = 1_700_000_000 + i * 3601
            m.created.nanos = (i * 123_456_789) % 1_000_000_000
        if i % 6 == 0:
            m.quantity.value = 0                 # present, zero: the wrapper's value is not on the wire
        elif i % 6 != 3:
            m.quantity.value = i - 10
        if i % 2 == 0:
            m.note.value = f"note {i}"
        for j in range(i % 3):
            line = m.lines.add(sku=f"sku-{i}-{j}", qty=j)
            if j:
                line.unit_price.currency = "USD"
                line.unit_price.units = j * 100
        m.channel = i % 3
        m.blob = bytes((i + k) % 256 for k in range(i % 5))
        m.ratio = (i - 20) / 7.0
        m.weight = i * 0.25
        m.gift = i % 2 == 0
        m.delta = -(i * 37) if i % 2 else i * 37
        m.delta64 = -(2 ** 62) + i if i % 7 == 0 else i - 30
        m.big = 2 ** 64 - 1 - i if i % 9 == 0 else i * 1_000_000_007
        m.f32 = 2 ** 32 - 1 - i if i % 8 == 0 else i
        m.f64 = 2 ** 63 + i if i % 10 == 0 else i * 3
        m.sf32 = -(2 ** 31) if i % 13 == 0 else -i
        m.sf64 = 2 ** 63 - 1 if i % 12 == 0 else -i * 5
        m.small = -(2 ** 31) if i % 14 == 0 else i
        m.readings.extend(range(-i, -i + i % 6))
        for j in range(i % 2 + (i % 5 == 0)):
            m.prices[i * 10 + j].units = j - 1
        out.append(m)
    return out


# ---------------------------------------------------------------------- the runtime's reading

_WRAPPERS = {f"google.protobuf.{n}Value" for n in
             ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes")}
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def spark_row(message: Any, *, emit_default_values: bool = False, enums_as_ints: bool = False,
              unwrap_wrappers: bool = False) -> dict[str, Any]:
    """``message`` (parsed by the protobuf runtime) as Spark's ``from_protobuf`` renders it, in
    pyarrow's ``to_pylist`` form: a field not on the wire is null (its zero with
    ``emit_default_values``, for fields without presence), repeated fields are lists (maps: lists
    of (key, value), sorted by key), enums their names (numbers with ``enums_as_ints``),
    Timestamp a UTC datetime (microseconds), wrappers structs of ``value`` (the scalar with
    ``unwrap_wrappers``), uint32 / uint64 / fixed32 / fixed64 as the signed integers of their
    bits."""
    opts = {"emit": emit_default_values, "ints": enums_as_ints, "unwrap": unwrap_wrappers}
    return _message(message, opts)


def _message(message: Any, opts: dict[str, bool]) -> dict[str, Any]:
    present = {f.name for f, _ in message.ListFields()}
    out: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if field.is_repeated:
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                key_f, value_f = field.message_type.fields
                out[field.name] = sorted((_scalar(key_f, k, opts), _value(value_f, v, opts))
                                         for k, v in value.items())
            else:
                out[field.name] = [_value(field, v, opts) for v in value]
        elif field.name in present:
            out[field.name] = _value(field, value, opts)
        elif opts["emit"] and not field.has_presence:
            out[field.name] = _value(field, value, opts)
        else:
            out[field.name] = None
    return out


def _value(field: Any, value: Any, opts: dict[str, bool]) -> Any:
    kind = field.message_type
    if kind is None:
        return _scalar(field, value, opts)
    if kind.full_name == "google.protobuf.Timestamp":
        micros = value.seconds * 1_000_000 + value.nanos // 1000
        return _EPOCH + datetime.timedelta(microseconds=micros)
    if kind.full_name in _WRAPPERS and opts["unwrap"]:
        return _scalar(kind.fields_by_name["value"], value.value, opts)
    return _message(value, opts)


def _scalar(field: Any, value: Any, opts: dict[str, bool]) -> Any:
    if field.enum_type is not None:
        if opts["ints"]:
            return int(value)
        known = field.enum_type.values_by_number.get(value)
        return known.name if known is not None else None
    if field.type in (field.TYPE_UINT32, field.TYPE_FIXED32) and value >= 2 ** 31:
        return value - 2 ** 32
    if field.type in (field.TYPE_UINT64, field.TYPE_FIXED64) and value >= 2 ** 63:
        return value - 2 ** 64
    if field.type == field.TYPE_FLOAT:
        return float(value)
    return value
