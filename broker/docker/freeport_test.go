package docker

import (
	"net"
	"strconv"
	"testing"
)

// freePort picks below the ephemeral range, where the Docker Engine does
// not hand ports to other containers, and never one that is taken.
func TestFreePortBelowTheEphemeralRange(t *testing.T) {
	for range 50 {
		port, err := freePort("")
		if err != nil {
			t.Fatal(err)
		}
		if port < pickPortLow || port > pickPortHigh {
			t.Fatalf("port %d, want within %d–%d", port, pickPortLow, pickPortHigh)
		}
		l, err := net.Listen("tcp", net.JoinHostPort(DefaultAddress, strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("port %d picked, but not free: %v", port, err)
		}
		l.Close()
	}
}
