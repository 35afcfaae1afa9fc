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
	// LabelPIDNS is the creating process's PID namespace, as the link
	// /proc/self/ns/pid reads ("pid:[4026531836]"; namespaces(7)); absent
	// where unknown. A process in a container (the tool's image, run with
	// the Docker socket and the host's network, whose hostname is the
	// host's) has pids of its own: its pid says nothing about the host's
	// processes, nor theirs about it.
	LabelPIDNS = "org.rmqtorture.pidns"
)

// Owner is the rmqtorture process that created something: its pid, that
// pid's start time (a pid is reused once its process is gone), the PID
// namespace both belong to, its user and its host.
type Owner struct {
	PID   int    `json:"pid"`
	Start string `json:"start,omitempty"`
	PIDNS string `json:"pid_ns,omitempty"`
	UID   int    `json:"uid"`
	Host  string `json:"host"`
}

// Self is this process as an Owner.
var Self = sync.OnceValue(func() Owner {
	host, _ := os.Hostname()
	return Owner{PID: os.Getpid(), Start: processStart(os.Getpid()), PIDNS: pidNamespace("self"), UID: os.Getuid(), Host: host}
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
	if o.PIDNS != "" {
		l[LabelPIDNS] = o.PIDNS
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
	o = Owner{PID: pid, Start: labels[LabelStart], PIDNS: labels[LabelPIDNS], UID: uid, Host: labels[LabelHost]}
	return o, perr == nil && uerr == nil && o.Host != ""
}

// Mine reports whether o is this user on this host.
func (o Owner) Mine() bool {
	s := Self()
	return o.UID == s.UID && o.Host == s.Host
}

// Alive reports whether o's process is known to be still running, or may
// be: on this host (or with no host recorded) a process has o.PID, and,
// where both start times are known, it started when o's did. Elsewhere
// nothing is known, and Alive is false. A process in another PID namespace
// (Unseen) counts as alive: its pid means nothing here, and removing the
// broker of a run still going is the one mistake cleanup must not make;
// only from the host's own namespace, which sees every process, is one
// whose namespace holds no process any more known to be gone.
func (o Owner) Alive() bool {
	if o.PID <= 0 || (o.Host != "" && o.Host != Self().Host) {
		return false
	}
	if o.Unseen() {
		return true
	}
	if o.otherNamespace() {
		return namespaceInUse(o.PIDNS)
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

// otherNamespace reports whether o's process ran in a PID namespace other
// than this process's (both known).
func (o Owner) otherNamespace() bool {
	self := Self().PIDNS
	return o.PIDNS != "" && self != "" && o.PIDNS != self
}

// Unseen reports whether o's process may have run in a PID namespace that
// this process cannot look into: this process runs in a container (its
// namespace is known and not the host's initial one) and o's namespace is
// another, or unknown (an rmqtorture before the label), so whether o's
// process still runs cannot be told from here.
func (o Owner) Unseen() bool {
	self := Self().PIDNS
	return self != "" && self != initialPIDNamespace && o.PIDNS != self
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

// initialPIDNamespace is the host's initial PID namespace as /proc/PID/ns/pid
// reads: its inode number is fixed, PROC_PID_INIT_INO in the kernel's
// include/linux/proc_ns.h. A process in it sees every process on the host.
const initialPIDNamespace = "pid:[4026531836]"

// pidNamespace returns the PID namespace of process pid ("self" for this
// one) as the link /proc/PID/ns/pid reads, or "" where /proc is not there
// or the link cannot be read (another user's process).
func pidNamespace(pid string) string {
	ns, err := os.Readlink("/proc/" + pid + "/ns/pid")
	if err != nil {
		return ""
	}
	return ns
}

// namespaceInUse reports whether some process this one can see runs in PID
// namespace ns: a namespace exists as long as a process is in it
// (pid_namespaces(7)). Processes whose link cannot be read (another user's)
// are not counted; an Owner is looked at only when it is this user's.
func namespaceInUse(ns string) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // nothing can be told: not known to be gone
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if pidNamespace(e.Name()) == ns {
			return true
		}
	}
	return false
}
