package traffic

import "sync"

// Signal is a broadcast to the publish loops waiting for a
// settlement (the last confirms, in-doubt ids to republish, the burst going
// idle). A wait channel is made only when a loop asks for one and closed by
// the next signal, so the confirm path, which signals on every batch of
// confirms, makes no channel while no loop waits. The zero value is ready.
type Signal struct {
	mu sync.Mutex
	ch chan struct{} // nil while no loop waits
}

// Wait returns the channel the next signal closes; take it before checking
// the state it guards.
func (s *Signal) Wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Signal wakes every loop waiting.
func (s *Signal) Signal() {
	s.mu.Lock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
	s.mu.Unlock()
}
