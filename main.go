// Command rmqtorture kills a RabbitMQ broker mid-burst and accounts for every
// message. See README.md.
package main

import (
	_ "embed"
	"os"

	"github.com/rmqtorture/rmqtorture/cmd"
)

// shipped is scenarios.yaml, built in: commands that read scenarios use it
// when -f is not given, so the binary works from any folder.
//
//go:embed scenarios.yaml
var shipped []byte

func main() {
	cmd.Shipped = shipped
	// cmd.Main handles Ctrl-C and SIGTERM: the first stops the run and writes
	// the partial report, the second writes what is known and removes the
	// container, the third exits at once.
	os.Exit(cmd.Main(os.Args[1:], os.Stdout, os.Stderr))
}
