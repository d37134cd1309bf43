"""A TLS handshake in memory (no sockets) between a client and a server context, for tests of
what a context presents and accepts."""
from __future__ import annotations

import ssl


def handshake(client: ssl.SSLContext, server: ssl.SSLContext, rounds: int = 20
              ) -> tuple[ssl.SSLObject, ssl.SSLObject]:
    """The client and server ends once both finished the handshake (an ssl.SSLError as either
    side raises it; AssertionError if it does not finish in ``rounds`` exchanges)."""
    c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
    c = client.wrap_bio(c_in, c_out, server_hostname="localhost")
    s = server.wrap_bio(s_in, s_out, server_side=True)
    done = {"c": False, "s": False}
    for _ in range(rounds):
        for name, side in (("c", c), ("s", s)):
            if not done[name]:
                try:
                    side.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            return c, s
    raise AssertionError("the handshake did not finish")
