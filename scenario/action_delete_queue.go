package scenario

// DeleteQueue deletes the queue under test while the broker runs
// (queue.delete, as an operator or a clean-up job would) and declares it
// again after Down, as an application that re-declares its topology
// would. Until then every publish is unroutable (basic.return with
// mandatory). The confirmed messages it removed are the scenario's own
// doing, never durability loss (rabbitmq-server#1877: confirms for
// messages to a deleted queue).
const DeleteQueue Action = "delete-queue"

// deleteQueueSpec: down (a duration, default 5s) before the queue is
// declared again.
var deleteQueueSpec = ActionSpec{
	Name:     DeleteQueue,
	Params:   []Param{ParamDown},
	Recovers: true, Leaves: "queue deleted", Repeatable: true, RemovesMessages: true, DeletesQueue: true,
	While:         "while the queue under test was deleted",
	validateQueue: validateDeleteQueue,
}

// validateDeleteQueue checks a delete-queue step (its action at fp): it
// re-declares only the queue under test after down, so companions that
// hold messages of their own (a second bound queue, a dead-letter queue)
// would be refused as stale, and live consumers lose their subscription
// with the queue (basic.cancel).
func validateDeleteQueue(p *parser, fp string, s *Scenario) {
	switch {
	case s.Consumers.Enabled():
		p.fail(fp, "delete-queue cancels live consumers' subscriptions (basic.cancel) and they do not subscribe again: use purge-queue, or no consumers")
	case s.Queue.AlsoBindType != "" || s.Queue.DeadLetterQueue:
		p.fail(fp, "delete-queue re-declares only the queue under test: it cannot be combined with queue.also_bind_type or queue.dead_letter_queue")
	}
}
