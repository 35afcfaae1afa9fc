package traffic

import "testing"

// A signal closes the channel a waiter took, and only that one; with no
// waiter it makes and closes nothing.
func TestSettleSignal(t *testing.T) {
	var s Signal
	s.Signal() // nobody waits
	if s.ch != nil {
		t.Fatal("a signal with no waiter made a channel")
	}
	a, b := s.Wait(), s.Wait()
	if a != b {
		t.Error("two waiters before a signal got different channels")
	}
	s.Signal()
	select {
	case <-a:
	default:
		t.Fatal("the signal did not close the waiters' channel")
	}
	c := s.Wait()
	select {
	case <-c:
		t.Fatal("a wait after the signal is already woken")
	default:
	}
}
