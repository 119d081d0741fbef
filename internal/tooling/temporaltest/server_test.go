package temporaltest

import (
	"net"
	"strconv"
	"testing"
)

// A port FreePort returns is not handed out again by the kernel to an
// address of port 0 while the server it was chosen for starts: a dev
// server picks its history, matching and worker services' ports that way
// (the CLI's GetFreePort), and a restarted one's history service once
// found its port taken (bind: address already in use) by the metrics or
// HTTP listener of a server given a FreePort port. Unreserved, a port
// came back within 1,538, 9,363 and 6,692 binds: 40,000 make it all but
// certain.
func TestFreePortIsNotHandedOutAgain(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40_000 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		got := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if got == port {
			t.Fatalf("port %d from FreePort handed out again to 127.0.0.1:0 after %d binds", port, i+1)
		}
	}
	// The server it was chosen for can still listen on it.
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("listen on the port from FreePort: %v", err)
	}
	ln.Close()
}
