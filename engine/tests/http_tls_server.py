#!/usr/bin/env python3
"""An HTTPS server for test_http.c: the certificates in DIR (ca.pem, server.pem, server.key), a client certificate
asked for but not required; every GET answers "client: <the client certificate's CN, or none>". Prints its port."""
import http.server
import ssl
import sys

folder = sys.argv[1]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        name = "none"
        cert = self.connection.getpeercert()
        for rdn in (cert or {}).get("subject", ()):
            for key, value in rdn:
                if key == "commonName":
                    name = value
        body = ("client: " + name).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(folder + "/server.pem", folder + "/server.key")
context.load_verify_locations(folder + "/ca.pem")
context.verify_mode = ssl.CERT_OPTIONAL
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
