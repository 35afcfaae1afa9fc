package scenario

// PurgeQueue removes every message of the queue under test (queue.purge)
// while the burst goes on; like DeleteQueue, what it removed is counted
// apart from durability loss.
const PurgeQueue Action = "purge-queue"

// purgeQueueSpec takes no parameter: it is over when the call returns.
var purgeQueueSpec = ActionSpec{
	Name:   PurgeQueue,
	Leaves: "up", Repeatable: true, RemovesMessages: true,
	While: "while the queue under test was being purged",
}
