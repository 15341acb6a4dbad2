"""The HTTP edge, before any API field is read: framing (strict HTTP/1.1), connections and
conn_table (the connection loop, caps, deadlines, drain) and admission (keys, in-flight slots);
the body is decoded past the edge (onepass/body.py). Not named `http`: the shim would shadow
the standard library's package for any script that puts onepass/ on sys.path."""
