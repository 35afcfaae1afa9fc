package broker

import (
	"context"
	"net"
	"testing"
	"time"
)

// A --uri whose port refuses connections ends the first wait for the
// broker after refusedGrace, naming the address: the user said it runs.
func TestWaitReadyRefusedBeforeAnyLogin(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	e, err := NewExternal("amqp://u:longpassword@" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	err = e.WaitReady(context.Background(), time.Minute)
	want := "nothing accepts connections at " + addr + ", vhost / (connection refused for 3s): is the broker running, and are the host and port right?"
	if err == nil || err.Error() != want {
		t.Fatalf("WaitReady: %v\nwant %q", err, want)
	}
}
