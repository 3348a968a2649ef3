"""A kazoo Lock peer for the interop tests: kazoo_lock.py CONNECT PATH hold|try DIR.
hold: acquire, create DIR/held, wait for DIR/release, release.
try:  try for 0.5 s; write "acquired" or "busy" to DIR/result (and release).
kazoo recognises zklock's and Curator's nodes through extra_lock_patterns."""
import os, sys, time
from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout

connect, path, mode, out = sys.argv[1:5]


def publish(name, text):
    """Writes DIR/name whole or not at all: the test polls for the file and reads it at once."""
    tmp = os.path.join(out, name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, os.path.join(out, name))


k = KazooClient(hosts=connect, timeout=30)
k.start()
lock = k.Lock(path, extra_lock_patterns=["-lock-"])
if mode == "hold":
    lock.acquire()
    publish("held", "held")
    while not os.path.exists(os.path.join(out, "release")):
        time.sleep(0.01)
    lock.release()
else:
    try:
        got = lock.acquire(timeout=0.5)
    except LockTimeout:
        got = False
    publish("result", "acquired" if got else "busy")
    if got:
        lock.release()
k.stop()
