"""The HTTP edge, before any API field is read: framing (strict HTTP/1.1), connections and
conn_table (the connection loop, caps, deadlines, drain), admission (keys, in-flight slots) and
transport (body decoding and strict JSON). Not named `http`: the shim would shadow the standard
library's package for any script that puts onepass/ on sys.path."""
