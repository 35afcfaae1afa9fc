package traffic

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Redial calls dial with exponential backoff (50 ms doubling to 1 s) until
// it succeeds, fails with an error final says no retry can cure, or
// timeout passes (then "could not reconnect within …"); retrying, when
// set, hears each error that is retried.
func Redial(ctx context.Context, timeout time.Duration, dial func() error, final func(error) bool, retrying func(error)) error {
	deadline := time.Now().Add(timeout)
	backoff := 50 * time.Millisecond
	for {
		err := dial()
		if err == nil {
			return nil
		}
		if final != nil && final(err) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("could not reconnect within %s: %w", timeout, err)
		}
		if retrying != nil {
			retrying(err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// RetryDrain runs once, one attempt at a drain, every 250 ms until it
// reports the drain complete, it fails with an error final says no retry
// can cure, or ctx ends: then "deadline passed while draining <what> (last
// error: …)", the drain incomplete, naming the last attempt's error that
// was not the deadline's own. retrying hears each error retried.
func RetryDrain(ctx context.Context, what string, once func() (bool, error), final func(error) bool, retrying func(error)) error {
	var last error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("deadline passed while draining %s (last error: %v)", what, last)
			case <-time.After(250 * time.Millisecond):
			}
		}
		done, err := once()
		if done {
			return nil
		}
		if final != nil && final(err) {
			return err
		}
		// The attempt the deadline cut short says only that; the one
		// before it says why the drain was still going.
		if last == nil || !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			last = err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("deadline passed while draining %s (last error: %v)", what, last)
		}
		retrying(err)
	}
}
