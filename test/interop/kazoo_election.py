"""A kazoo Election peer for the interop tests: kazoo_election.py CONNECT PATH lead|query DIR ID.
lead:  Election(PATH, ID).run(term): the term writes DIR/leading (ID), waits for DIR/release, returns.
query: write DIR/result: Election(PATH).contenders(), one id per line (the first leads)."""
import os, sys, time
from kazoo.client import KazooClient

connect, path, mode, out, ident = sys.argv[1:6]


def publish(name, text):
    """Writes DIR/name whole or not at all: the test polls for the file and reads it at once."""
    tmp = os.path.join(out, name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, os.path.join(out, name))


def term():
    publish("leading", ident)
    while not os.path.exists(os.path.join(out, "release")):
        time.sleep(0.01)


k = KazooClient(hosts=connect, timeout=30)
k.start()
election = k.Election(path, ident)
if mode == "lead":
    election.run(term)
else:
    publish("result", "".join(c + "\n" for c in election.contenders()))
k.stop()
