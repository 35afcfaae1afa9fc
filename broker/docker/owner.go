package docker

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Labels that say which rmqtorture process created a container, network or
// volume, so that cleanup (and the next run) can tell a leftover of a dead
// process from the broker of a run still going, and its own user's from
// another's on a shared engine.
const (
	LabelUID   = "org.rmqtorture.uid"   // uid of the creating process
	LabelHost  = "org.rmqtorture.host"  // hostname where the creating process ran
	LabelStart = "org.rmqtorture.start" // its start time: clock ticks after boot, /proc/PID/stat field 22 (proc(5)); absent where unknown
	LabelKeep  = "org.rmqtorture.keep"  // "true" when created with --keep: cleanup leaves it unless named by --run
)

// Owner is the rmqtorture process that created something: its pid, that
// pid's start time (a pid is reused once its process is gone), its user and
// its host.
type Owner struct {
	PID   int    `json:"pid"`
	Start string `json:"start,omitempty"`
	UID   int    `json:"uid"`
	Host  string `json:"host"`
}

// Self is this process as an Owner.
var Self = sync.OnceValue(func() Owner {
	host, _ := os.Hostname()
	return Owner{PID: os.Getpid(), Start: processStart(os.Getpid()), UID: os.Getuid(), Host: host}
})

// Labels are the labels rmqtorture puts on everything it creates for run
// runID: managed, the run id, this process as owner, and keep.
func Labels(runID string, keep bool) map[string]string {
	o := Self()
	l := map[string]string{
		LabelManaged: "true",
		LabelRun:     runID,
		LabelPID:     strconv.Itoa(o.PID),
		LabelUID:     strconv.Itoa(o.UID),
		LabelHost:    o.Host,
	}
	if o.Start != "" {
		l[LabelStart] = o.Start
	}
	if keep {
		l[LabelKeep] = "true"
	}
	return l
}

// ownerOf reads the owner labels. known is false when the pid, uid or host
// label is missing (made by an rmqtorture before these labels, or by hand).
func ownerOf(labels map[string]string) (o Owner, known bool) {
	pid, perr := strconv.Atoi(labels[LabelPID])
	uid, uerr := strconv.Atoi(labels[LabelUID])
	o = Owner{PID: pid, Start: labels[LabelStart], UID: uid, Host: labels[LabelHost]}
	return o, perr == nil && uerr == nil && o.Host != ""
}

// Mine reports whether o is this user on this host.
func (o Owner) Mine() bool {
	s := Self()
	return o.UID == s.UID && o.Host == s.Host
}

// Alive reports whether o's process is known to be still running: on this
// host (or with no host recorded) a process has o.PID, and, where both start
// times are known, it started when o's did. Elsewhere nothing is known, and
// Alive is false.
func (o Owner) Alive() bool {
	if o.PID <= 0 || (o.Host != "" && o.Host != Self().Host) {
		return false
	}
	if !processExists(o.PID) {
		return false
	}
	if o.Start == "" {
		return true
	}
	now := processStart(o.PID)
	return now == "" || now == o.Start
}

func (o Owner) String() string {
	return fmt.Sprintf("pid %d of uid %d on %s", o.PID, o.UID, o.Host)
}

// processStart returns pid's start time as /proc/PID/stat field 22 gives it
// (clock ticks after boot; proc(5)), or "" where /proc is not there.
func processStart(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// Field 2, the command name, is in parentheses and may hold spaces and
	// parentheses itself: count from the last ")", which is followed by
	// field 3.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return ""
	}
	return fields[19] // field 22
}
