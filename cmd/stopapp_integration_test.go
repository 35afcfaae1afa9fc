package cmd

import (
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// stop-app against a real broker: the stopping application closes the
// publisher's connection and takes no new one until start_app; nothing
// confirmed is lost and the container is never restarted
// (checkToolActionMidBurst).
func TestStopAppMidBurst(t *testing.T) {
	checkToolActionMidBurst(t, scenario.StopApp)
}
