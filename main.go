// Command rmqtorture kills a RabbitMQ broker mid-burst and accounts for every
// message. See README.md.
package main

import (
	_ "embed"
	"os"
	"os/signal"
	"syscall"

	"github.com/rmqtorture/rmqtorture/cmd"
)

// shipped is scenarios.yaml, built in: commands that read scenarios use it
// when -f is not given, so the binary works from any folder.
//
//go:embed scenarios.yaml
var shipped []byte

func main() {
	cmd.Shipped = shipped
	// A reader that goes away (`rmqtorture run … | head`) would otherwise
	// kill the process with SIGPIPE at its next write to stdout or stderr,
	// before it removes the broker container it created. Ignored, the write
	// fails with EPIPE instead (os/signal: "If the program is not calling
	// Notify to receive SIGPIPE signals…"), which the run treats as any
	// failed write: it finishes, cleans up and exits 4.
	signal.Ignore(syscall.SIGPIPE)
	// cmd.Main handles Ctrl-C and SIGTERM: the first stops the run and writes
	// the partial report, the second writes what is known and removes the
	// container, the third exits at once.
	os.Exit(cmd.Main(os.Args[1:], os.Stdout, os.Stderr))
}
