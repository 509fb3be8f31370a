#!/usr/bin/env python3
"""Writes one message module of this crate from a Kafka message schema (JSON).

Sluice's own generator (see SLUICE-PATCH.md): it reads the JSON files from the
kafka-clients jar and writes `src/messages/<snake_name>.rs` in the same shape as
the crate's published modules, so that Kafka 4.4's versions and messages can be
added without hand-editing thousands of lines. Run `rustfmt` on the output.

Usage: gen44.py OUT_DIR SCHEMA.json [SCHEMA.json ...]
"""
import json
import os
import re
import sys

# Rust names the published crate chose where the JSON's name differs; keeping
# them keeps every caller compiling.
RENAMES = {
    ("TxnOffsetCommitRequest", "GenerationIdOrMemberEpoch"): "generation_id",
    ("ComponentData", "Match"): "_match",
}
ENTITY = {
    "brokerId": "super::BrokerId",
    "groupId": "super::GroupId",
    "producerId": "super::ProducerId",
    "topicName": "super::TopicName",
    "transactionalId": "super::TransactionalId",
}
INTS = {"int8": ("Int8", "i8"), "int16": ("Int16", "i16"), "int32": ("Int32", "i32"),
        "int64": ("Int64", "i64"), "uint16": ("UInt16", "u16"), "float64": ("Float64", "f64")}


def load(path):
    text = re.sub(r"//[^\n]*", "", open(path).read())
    return json.loads(text)


def snake(name):
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    s = re.sub(r"([a-z])([0-9])", r"\1_\2", s)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.lower()


def parse_range(v):
    """(lo, hi) with hi None for open-ended; None for 'none'."""
    if v is None or v == "none":
        return None
    if v.endswith("+"):
        return (int(v[:-1]), None)
    if "-" in v:
        a, b = v.split("-")
        return (int(a), int(b))
    return (int(v), int(v))


class Ctx:
    def __init__(self, schema):
        self.schema = schema
        self.name = schema["name"]
        self.kind = schema["type"]  # request / response
        self.valid = parse_range(schema["validVersions"])
        if schema.get("latestVersionUnstable"):
            # Kafka does not serve an unstable version; neither does the crate.
            self.valid = (self.valid[0], self.valid[1] - 1)
        self.flex = parse_range(schema.get("flexibleVersions", "none"))
        self.common = {s["name"]: s for s in schema.get("commonStructs", [])}

    def clamp(self, r):
        if r is None:
            return None
        lo = max(r[0], self.valid[0])
        hi = self.valid[1] if r[1] is None else min(r[1], self.valid[1])
        return None if lo > hi else (lo, hi)

    def fmt(self, r):
        c = self.clamp(r)
        if c is None:
            return "none"
        return str(c[0]) if c[0] == c[1] else f"{c[0]}-{c[1]}"

    def cond(self, r):
        """The `version ...` test for a version range, or '' when it always holds."""
        c = self.clamp(r)
        if c is None:
            return "false"
        lo, hi = r[0], r[1]
        vlo, vhi = self.valid
        if hi is None or hi >= vhi:
            return "" if lo <= vlo else f"version >= {lo}"
        if c[0] == c[1]:
            return f"version == {c[0]}"
        if lo <= vlo:
            return f"version <= {hi}"
        return f"version >= {lo} && version <= {hi}"

    def tag_cond(self, r):
        """Like `cond`, inside the block that already holds for flexible versions."""
        saved = self.valid
        self.valid = (max(self.valid[0], self.flex[0]), self.valid[1])
        try:
            return self.cond(r)
        finally:
            self.valid = saved

    def always_flex(self, r):
        """True/False when the field's versions are all flexible/none flexible, else None."""
        if self.flex is None:
            return False
        c = self.clamp(r)
        if c is None:
            return False
        if c[0] >= self.flex[0]:
            return True
        if c[1] < self.flex[0]:
            return False
        return None


class Field:
    def __init__(self, ctx, owner, f):
        self.ctx = ctx
        self.json = f
        self.name = RENAMES.get((owner, f["name"]), snake(f["name"]))
        self.type = f["type"]
        self.versions = parse_range(f["versions"])
        self.nullable = parse_range(f.get("nullableVersions")) is not None
        self.tag = f.get("tag")
        self.tagged = parse_range(f.get("taggedVersions")) if "taggedVersions" in f else None
        self.ignorable = f.get("ignorable", False)
        self.about = f.get("about", "")
        self.entity = f.get("entityType")
        d = f.get("default")
        self.default = None if d is None else (str(d).lower() if isinstance(d, bool) else str(d))
        self.builder = snake(f["name"])
        self.is_array = self.type.startswith("[]")
        self.elem = self.type[2:] if self.is_array else self.type
        self.is_struct = self.elem[0].isupper()

    # -- Rust types -------------------------------------------------------
    def elem_rust(self):
        e = self.elem
        if self.is_struct:
            return e
        if e in INTS:
            return ENTITY.get(self.entity, INTS[e][1]) if self.entity else INTS[e][1]
        if e == "bool":
            return "bool"
        if e == "string":
            return ENTITY.get(self.entity, "StrBytes") if self.entity else "StrBytes"
        if e == "uuid":
            return "Uuid"
        if e in ("bytes", "records"):
            return "Bytes"
        raise SystemExit(f"unknown type {e}")

    def rust(self):
        t = f"Vec<{self.elem_rust()}>" if self.is_array else self.elem_rust()
        return f"Option<{t}>" if self.nullable else t

    def elem_codec(self, compact):
        e = self.elem
        if self.is_struct:
            if not self.is_array and self.nullable:
                return "types::OptionStruct { version }"
            return "types::Struct { version }"
        if e in INTS:
            return "types::" + INTS[e][0]
        if e == "bool":
            return "types::Boolean"
        if e == "uuid":
            return "types::Uuid"
        if e == "string":
            return "types::CompactString" if compact else "types::String"
        if e in ("bytes", "records"):
            return "types::CompactBytes" if compact else "types::Bytes"
        raise SystemExit(f"unknown type {e}")

    def codec(self, compact):
        if self.is_array:
            arr = "types::CompactArray" if compact else "types::Array"
            return f"{arr}({self.elem_codec(compact)})"
        return self.elem_codec(compact)

    def has_compact(self):
        return self.is_array or self.elem in ("string", "bytes", "records")

    # -- defaults ---------------------------------------------------------
    def default_value(self):
        d = self.default
        if self.nullable:
            if d == "null":
                return "None"
            return "Some(Default::default())"
        if self.is_array or self.is_struct:
            return "Default::default()"
        e = self.elem
        if e in INTS:
            v = d if d is not None else ("0.0" if e == "float64" else "0")
            return f"({v}).into()" if self.entity else v
        if e == "bool":
            return d if d is not None else "false"
        if e == "uuid":
            return "Uuid::nil()"
        if e == "string":
            if d is None:
                return "Default::default()"
            return f'StrBytes::from_static_str("{d}")'
        return "Default::default()"

    def nondefault(self):
        """A Rust expression that holds when the field differs from its default."""
        s = f"self.{self.name}"
        d = self.default
        if self.nullable:
            if d == "null":
                return f"!{s}.is_none()"
            return f"!{s}.as_ref().map(|x| x.is_empty()).unwrap_or_default()"
        if self.is_array:
            return f"!{s}.is_empty()"
        if self.is_struct:
            return f"&{s} != &Default::default()"
        e = self.elem
        if e in INTS:
            return f"{s} != {d if d is not None else ('0.0' if e == 'float64' else '0')}"
        if e == "bool":
            return f"!{s}" if d == "true" else s
        if e == "uuid":
            return f"&{s} != &Uuid::nil()"
        if e == "string":
            return f'&{s} != "{d}"' if d is not None else f"!{s}.is_empty()"
        return f"!{s}.is_empty()"


def doc(lines, text, indent):
    for l in text.split("\n"):
        lines.append(f"{indent}/// {l}".rstrip())


class Struct:
    def __init__(self, ctx, name, fields):
        self.ctx = ctx
        self.name = name
        self.fields = [Field(ctx, name, f) for f in fields]
        self.plain = [f for f in self.fields if f.tag is None]
        self.tagged = sorted([f for f in self.fields if f.tag is not None], key=lambda f: f.tag)

    def render(self, out, top):
        c = self.ctx
        vr = c.fmt(c.valid)
        flexible = c.flex is not None
        L = []
        L.append(f"/// Valid versions: {vr}")
        L.append("#[non_exhaustive]")
        L.append("#[derive(Debug, Clone, PartialEq)]")
        L.append(f"pub struct {self.name} {{")
        for f in self.fields:
            doc(L, f.about, "    ")
            L.append("    ///")
            L.append(f"    /// Supported API versions: {c.fmt(f.versions)}")
            L.append(f"    pub {f.name}: {f.rust()},")
            L.append("")
        if flexible:
            L.append("    /// Other tagged fields")
            L.append("    pub unknown_tagged_fields: BTreeMap<i32, Bytes>,")
        else:
            L.pop()
        L.append("}")
        L.append("")
        L.append(f"impl {self.name} {{")
        for f in self.fields:
            L.append(f"    /// Sets `{f.name}` to the passed value.")
            L.append("    ///")
            doc(L, f.about, "    ")
            L.append("    ///")
            L.append(f"    /// Supported API versions: {c.fmt(f.versions)}")
            L.append(f"    pub fn with_{f.builder}(mut self, value: {f.rust()}) -> Self {{")
            L.append(f"        self.{f.name} = value;")
            L.append("        self")
            L.append("    }")
        L += [] if not flexible else [
            "    /// Sets unknown_tagged_fields to the passed value.",
            "    pub fn with_unknown_tagged_fields(mut self, value: BTreeMap<i32, Bytes>) -> Self {",
            "        self.unknown_tagged_fields = value;",
            "        self",
            "    }",
            "    /// Inserts an entry into unknown_tagged_fields.",
            "    pub fn with_unknown_tagged_field(mut self, key: i32, value: Bytes) -> Self {",
            "        self.unknown_tagged_fields.insert(key, value);",
            "        self",
            "    }",
        ]
        L += ["}", ""]
        enc_feature, dec_feature = ("client", "broker") if c.kind == "request" else ("broker", "client")
        L.append(f'#[cfg(feature = "{enc_feature}")]')
        L.append(f"impl Encodable for {self.name} {{")
        L.append("    fn encode<B: ByteBufMut>(&self, buf: &mut B, version: i16) -> Result<()> {")
        L += self.version_check()
        L += self.encode_body(size=False)
        L.append("        Ok(())")
        L.append("    }")
        L.append("    fn compute_size(&self, version: i16) -> Result<usize> {")
        L.append("        let mut total_size = 0;")
        L += self.encode_body(size=True)
        L.append("        Ok(total_size)")
        L.append("    }")
        L.append("}")
        L.append("")
        L.append(f'#[cfg(feature = "{dec_feature}")]')
        L.append(f"impl Decodable for {self.name} {{")
        L.append("    fn decode<B: ByteBuf>(buf: &mut B, version: i16) -> Result<Self> {")
        L += self.version_check()
        L += self.decode_body()
        L.append("    }")
        L.append("}")
        L.append("")
        L.append(f"impl Default for {self.name} {{")
        L.append("    fn default() -> Self {")
        L.append("        Self {")
        for f in self.fields:
            L.append(f"            {f.name}: {f.default_value()},")
        if flexible:
            L.append("            unknown_tagged_fields: BTreeMap::new(),")
        L.append("        }")
        L.append("    }")
        L.append("}")
        L.append("")
        L.append(f"impl Message for {self.name} {{")
        L.append(f"    const VERSIONS: VersionRange = VersionRange {{ min: {c.valid[0]}, max: {c.valid[1]} }};")
        L.append("    const DEPRECATED_VERSIONS: Option<VersionRange> = None;")
        L.append("}")
        L.append("")
        out += L

    def version_check(self):
        lo, hi = self.ctx.valid
        test = f"version != {lo}" if lo == hi else f"version < {lo} || version > {hi}"
        return [f"        if {test} {{",
                '            bail!("specified version not supported by this message type");',
                "        }"]

    def value_stmt(self, f, size, compact, ind):
        codec = f.codec(compact)
        if size:
            return [f"{ind}total_size += {codec}.compute_size(&self.{f.name})?;"]
        return [f"{ind}{codec}.encode(buf, &self.{f.name})?;"]

    def flex_split(self, f, ind, stmt):
        """Emit `stmt(compact, indent)` once or split on the flexible versions."""
        af = self.ctx.always_flex(f.versions)
        if not f.has_compact() or af is not None:
            return stmt(bool(af) and f.has_compact(), ind)
        fc = self.ctx.cond(self.ctx.flex)
        return ([f"{ind}if {fc} {{"] + stmt(True, ind + "    ") + [f"{ind}}} else {{"]
                + stmt(False, ind + "    ") + [f"{ind}}}"])

    def encode_body(self, size):
        c = self.ctx
        L = []
        ind = "        "
        for f in self.plain:
            if c.clamp(f.versions) is None:
                continue
            vc = c.cond(f.versions)
            body = lambda compact, i, f=f: self.value_stmt(f, size, compact, i)
            if not vc:
                L += self.flex_split(f, ind, body)
                continue
            L.append(f"{ind}if {vc} {{")
            L += self.flex_split(f, ind + "    ", body)
            if not f.ignorable:
                L.append(f"{ind}}} else {{")
                L.append(f"{ind}    if {f.nondefault()} {{")
                L.append(f'{ind}        bail!("A field is set that is not available on the selected protocol version");')
                L.append(f"{ind}    }}")
            L.append(f"{ind}}}")
        if c.flex is not None:
            fc = c.cond(c.flex)
            inner = ind + "    " if fc else ind
            T = []
            mut = "mut " if self.tagged else ""
            T.append(f"{inner}let {mut}num_tagged_fields = self.unknown_tagged_fields.len();")
            for f in self.tagged:
                T += self.tag_guard(f, inner, [f"num_tagged_fields += 1;"])
            T.append(f"{inner}if num_tagged_fields > std::u32::MAX as usize {{")
            T.append(f'{inner}    bail!("Too many tagged fields to encode ({{}} fields)", num_tagged_fields);')
            T.append(f"{inner}}}")
            if size:
                T.append(f"{inner}total_size += types::UnsignedVarInt.compute_size(num_tagged_fields as u32)?;")
            else:
                T.append(f"{inner}types::UnsignedVarInt.encode(buf, num_tagged_fields as u32)?;")
            for f in self.tagged:
                codec = f.codec(True)
                body = [f"let computed_size = {codec}.compute_size(&self.{f.name})?;",
                        "if computed_size > std::u32::MAX as usize {",
                        '    bail!("Tagged field is too large to encode ({} bytes)", computed_size);',
                        "}"]
                if size:
                    body += [f"total_size += types::UnsignedVarInt.compute_size({f.tag})?;",
                             "total_size += types::UnsignedVarInt.compute_size(computed_size as u32)?;",
                             "total_size += computed_size;"]
                else:
                    body += [f"types::UnsignedVarInt.encode(buf, {f.tag})?;",
                             "types::UnsignedVarInt.encode(buf, computed_size as u32)?;",
                             f"{codec}.encode(buf, &self.{f.name})?;"]
                T += self.tag_guard(f, inner, body)
            last_versioned = bool(self.tagged) and c.tag_cond(self.tagged[-1].versions) != ""
            if not last_versioned:
                T.append("")
            next_tag = (self.tagged[-1].tag + 1) if self.tagged else 0
            if size:
                T.append(f"{inner}total_size += compute_unknown_tagged_fields_size(&self.unknown_tagged_fields)?;")
            else:
                T.append(f"{inner}write_unknown_tagged_fields(buf, {next_tag}.., &self.unknown_tagged_fields)?;")
            if fc:
                L.append(f"{ind}if {fc} {{")
                L += T
                L.append(f"{ind}}}")
            else:
                L += T
        else:
            L.append("")
        return L

    def tag_guard(self, f, ind, body):
        vc = self.ctx.tag_cond(f.versions)
        L = []
        i = ind
        if vc:
            L.append(f"{ind}if {vc} {{")
            i = ind + "    "
        L.append(f"{i}if {f.nondefault()} {{")
        L += [f"{i}    {b}" for b in body]
        L.append(f"{i}}}")
        if vc:
            L.append(f"{ind}}}")
        return L

    def decode_body(self):
        c = self.ctx
        L = []
        ind = "        "
        for f in self.fields:
            if f.tag is not None:
                L.append(f"{ind}let mut {f.name} = {f.default_value()};")
                continue
            if c.clamp(f.versions) is None:
                L.append(f"{ind}let {f.name} = {f.default_value()};")
                continue
            vc = c.cond(f.versions)
            dec = lambda compact, i, f=f: [f"{i}{f.codec(compact)}.decode(buf)?"]
            if not vc and (not f.has_compact() or c.always_flex(f.versions) is not None):
                L.append(f"{ind}let {f.name} = {dec(bool(c.always_flex(f.versions)) and f.has_compact(), '')[0]};")
                continue
            if not vc:
                fc = c.cond(c.flex)
                L.append(f"{ind}let {f.name} = if {fc} {{")
                L += dec(True, ind + "    ")
                L.append(f"{ind}}} else {{")
                L += dec(False, ind + "    ")
                L.append(f"{ind}}};")
                continue
            L.append(f"{ind}let {f.name} = if {vc} {{")
            L += self.flex_split(f, ind + "    ", dec)
            L.append(f"{ind}}} else {{")
            L.append(f"{ind}    {f.default_value()}")
            L.append(f"{ind}}};")
        if c.flex is not None:
            L.append(f"{ind}let mut unknown_tagged_fields = BTreeMap::new();")
        if c.flex is not None:
            fc = c.cond(c.flex)
            i = ind + "    " if fc else ind
            T = [f"{i}let num_tagged_fields = types::TaggedFieldCount.decode(buf)?;",
                 f"{i}for _ in 0..num_tagged_fields {{",
                 f"{i}    let tag: u32 = types::UnsignedVarInt.decode(buf)?;",
                 f"{i}    let size: u32 = types::UnsignedVarInt.decode(buf)?;"]
            unknown = ["let unknown_value = buf.try_get_bytes(size as usize)?;",
                       "unknown_tagged_fields.insert(tag as i32, unknown_value);"]
            if self.tagged:
                j = i + "        "
                T.append(f"{i}    match tag {{")
                for f in self.tagged:
                    T.append(f"{j}{f.tag} => {{")
                    vc = c.tag_cond(f.versions)
                    stmt = f"{f.name} = {f.codec(True)}.decode(buf)?;"
                    if vc:
                        T += [f"{j}    if {vc} {{", f"{j}        {stmt}", f"{j}    }} else {{",
                              f'{j}        bail!("Tag {{}} is not valid for version {{}}", tag, version);',
                              f"{j}    }}"]
                    else:
                        T.append(f"{j}    {stmt}")
                    T.append(f"{j}}}")
                T.append(f"{j}_ => {{")
                T += [f"{j}    {u}" for u in unknown]
                T.append(f"{j}}}")
                T.append(f"{i}    }}")
            else:
                T += [f"{i}    {u}" for u in unknown]
            T.append(f"{i}}}")
            if fc:
                L.append(f"{ind}if {fc} {{")
                L += T
                L.append(f"{ind}}}")
            else:
                L += T
        L.append(f"{ind}Ok(Self {{")
        for f in self.fields:
            L.append(f"{ind}    {f.name},")
        if c.flex is not None:
            L.append(f"{ind}    unknown_tagged_fields,")
        L.append(f"{ind}}})")
        return L


def collect(ctx, name, fields, acc):
    if name in acc:
        return
    acc[name] = fields
    for f in fields:
        t = f["type"].lstrip("[]")
        if "fields" in f:
            collect(ctx, t, f["fields"], acc)
        elif t in ctx.common:
            collect(ctx, t, ctx.common[t]["fields"], acc)


HEADER = """//! {name}
//!
//! See the schema for this message [here](https://github.com/apache/kafka/blob/trunk/clients/src/main/resources/common/message/{name}.json).
// WARNING: the items of this module are generated and should not be edited directly
#![allow(unused)]

use std::borrow::Borrow;
use std::collections::BTreeMap;

use anyhow::{{bail, Result}};
use bytes::Bytes;
use uuid::Uuid;

use crate::protocol::{{
    buf::{{ByteBuf, ByteBufMut}},
    compute_unknown_tagged_fields_size, types, write_unknown_tagged_fields, Decodable, Decoder,
    Encodable, Encoder, HeaderVersion, Message, StrBytes, VersionRange,
}};
"""


def header_version(ctx):
    flex_v, plain_v = (2, 1) if ctx.kind == "request" else (1, 0)
    if ctx.name == "ApiVersionsResponse":
        # Clients must read this response before they know the broker's versions.
        return ["        0"]
    if ctx.flex is None:
        return [f"        {plain_v}"]
    fc = ctx.cond(ctx.flex)
    if not fc:
        return [f"        {flex_v}"]
    return [f"        if {fc} {{", f"            {flex_v}", "        } else {", f"            {plain_v}", "        }"]


def generate(path):
    schema = load(path)
    ctx = Ctx(schema)
    acc = {}
    collect(ctx, ctx.name, schema.get("fields", []), acc)
    out = HEADER.format(name=ctx.name).split("\n")
    for name in sorted(acc):
        Struct(ctx, name, acc[name]).render(out, name == ctx.name)
    out.append(f"impl HeaderVersion for {ctx.name} {{")
    out.append("    fn header_version(version: i16) -> i16 {")
    out += header_version(ctx)
    out.append("    }")
    out.append("}")
    return snake(ctx.name) + ".rs", "\n".join(out) + "\n"


if __name__ == "__main__":
    out_dir = sys.argv[1]
    for p in sys.argv[2:]:
        if load(p).get("validVersions") == "none":
            continue
        fname, text = generate(p)
        with open(os.path.join(out_dir, fname), "w") as fh:
            fh.write(text)
        print(fname)
