package amqpx

import (
	"context"
	"errors"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Bounded returns fn's result when fn is quick, and otherwise aborts it
// after the deadline (or when ctx ends) and says the broker did not reply.
func TestBounded(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	if err := Bounded(ctx, time.Second, func() { t.Error("abort on a quick call") }, func() error { return boom }); err != boom {
		t.Errorf("quick call: %v", err)
	}
	stuck := func(abort chan struct{}) func() error {
		return func() error { <-abort; return amqp.ErrClosed }
	}
	abort := make(chan struct{})
	start := time.Now()
	err := Bounded(ctx, 30*time.Millisecond, func() { close(abort) }, stuck(abort))
	if !errors.Is(err, ErrNoReply) || !errors.Is(err, amqp.ErrClosed) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("stuck call: %v", err)
	}
	if d := time.Since(start); d < 30*time.Millisecond || d > 5*time.Second {
		t.Errorf("stuck call returned after %s", d)
	}
	cctx, cancel := context.WithCancel(ctx)
	abort = make(chan struct{})
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	if err := Bounded(cctx, time.Hour, func() { close(abort) }, stuck(abort)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
