// Command rmqtorture kills a RabbitMQ broker mid-burst and accounts for every
// message. See README.md.
package main

import (
	"os"

	"github.com/rmqtorture/rmqtorture/cmd"
)

func main() {
	// cmd.Main handles Ctrl-C and SIGTERM: the first stops the run and writes
	// the partial report, the second writes what is known and removes the
	// container, the third exits at once.
	os.Exit(cmd.Main(os.Args[1:], os.Stdout, os.Stderr))
}
