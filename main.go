// Command rmqtorture kills a RabbitMQ broker mid-burst and accounts for every
// message. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rmqtorture/rmqtorture/cmd"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		fmt.Fprintln(os.Stderr, "rmqtorture: interrupted: stopping, restoring the broker and writing the partial report (again to exit now)")
		cancel()
		<-sig
		fmt.Fprintln(os.Stderr, "rmqtorture: interrupted twice: removing the container this run created (at most 5 s; again to skip) and exiting")
		done := make(chan struct{})
		go func() {
			cmd.Abort(os.Stderr, 5*time.Second)
			close(done)
		}()
		select {
		case <-done:
		case <-sig:
		}
		os.Exit(cmd.ExitInterrupted)
	}()
	code := cmd.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	cancel()
	os.Exit(code)
}
