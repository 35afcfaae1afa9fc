package metrics

// A queue the scenario deletes (delete-queue) takes every message in it
// along, and the queue declared again under the same name starts empty. A
// copy of a message published before the delete that is delivered from the
// new queue came back from the old one: a quorum queue member on a node
// that was down during the delete can rejoin the new queue's group and
// replay its old log (rabbitmq-server#12366). The ledger tells those
// deliveries apart by publish attempts: it remembers, at the delete, how
// many attempts of each id had reached the broker by then, and an id
// delivered with no attempt made after the delete is resurrected.

// QueueDeleted records that the queue under test was deleted now (its
// queue.delete-ok came back). It remembers, per id, the publish attempts
// that were in the queue, or never reached it, when it was deleted: those
// the broker had answered (basic.ack, basic.nack, basic.return with its
// ack). An attempt still awaiting its confirm, one whose channel closed
// first (in doubt) and a fire-and-forget publish may sit unrouted in the
// broker's socket or channel and reach the queue declared again, so
// mid-burst they do not count. Once the burst is over (burstOver: every
// publish call returned, every channel closed, a fire-and-forget one only
// after connection.close-ok, which the broker sends after every earlier
// frame) every attempt but one awaiting a confirm counts. A later
// QueueDeleted replaces the earlier record: an id with no attempt after the
// last delete was published before every delete. Costs 2 bytes per id from
// the first call.
func (l *Ledger) QueueDeleted(burstOver bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hist.w != nil {
		l.hist.w.Write(HistoryRecord{Kind: HQueueDeleted, BurstOver: burstOver})
	}
	if l.atDelete == nil {
		l.atDelete = make([]uint16, len(l.attempts))
	}
	for seq, a := range l.attempts {
		o := l.outcome[seq]
		answered := o == Acked || o == Nacked || o == ReturnedAcked
		if !answered && !(burstOver && o != InFlight) {
			l.atDelete[seq] = 0
			continue
		}
		// Copies still awaiting their confirm (on_confirm_timeout:
		// republish) did not count either.
		l.atDelete[seq] = a - uint16(min(int(a), l.copies[seq]))
	}
}

// resurrected reports whether sent id seq, delivered d times, came back
// from a deleted queue: delivered, published before the last delete, and
// not published since. Deliveries all come from the drain after the burst
// (validation refuses live consumers with delete-queue), so every one of
// them is from the queue declared again. The caller holds l.mu.
func (l *Ledger) resurrected(seq, d int) bool {
	if l.atDelete == nil || d == 0 {
		return false
	}
	before := l.atDelete[seq]
	return before > 0 && before == l.attempts[seq]
}
