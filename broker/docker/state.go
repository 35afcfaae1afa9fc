package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
)

// StateDir is where rmqtorture records what it must restore on containers
// it did not create: $XDG_STATE_HOME/rmqtorture when XDG_STATE_HOME is an
// absolute path, else ~/.local/state/rmqtorture (XDG Base Directory
// Specification 0.8).
func StateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "rmqtorture"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the state folder: %w", err)
	}
	return filepath.Join(home, ".local", "state", "rmqtorture"), nil
}

// Restore is what to undo on a container rmqtorture did not create (named
// with --container) after a fault changed it: written before the fault,
// removed once the fault's own recovery has undone it. One left behind
// means its process died first; the next run or cleanup applies it.
type Restore struct {
	Container string    `json:"container"` // container id
	Name      string    `json:"name"`
	Owner     Owner     `json:"owner"` // the rmqtorture process that changed it
	Since     time.Time `json:"since"`
	Start     bool      `json:"start,omitempty"`     // killed, stopped or restarting: start it
	Unpause   bool      `json:"unpause,omitempty"`   // paused: unpause it
	Reconnect []string  `json:"reconnect,omitempty"` // disconnected: connect it to these networks again
	Watermark string    `json:"watermark,omitempty"` // memory alarm raised: set vm_memory_high_watermark back to this Erlang term
	// Commands are the recoveries of faults made of the broker's own
	// tools (scenario.ToolPlay.Recover, e.g. rabbitmqctl start_app), run
	// in the container in turn; only those of the action table are run.
	Commands [][]string `json:"commands,omitempty"`
	File     string     `json:"-"` // the state file
}

// Steps says what is left to undo, in the order Apply does it.
func (r *Restore) Steps() []string {
	var s []string
	if r.Unpause {
		s = append(s, "unpause")
	}
	if r.Start {
		s = append(s, "start")
	}
	for _, n := range r.Reconnect {
		s = append(s, "reconnect to network "+n)
	}
	if r.Watermark != "" {
		s = append(s, "set vm_memory_high_watermark back to "+r.Watermark)
	}
	for _, c := range r.Commands {
		s = append(s, "run "+strings.Join(c, " "))
	}
	return s
}

// save writes r to its state file atomically (a temporary file and a
// rename), or removes the file when nothing is left to undo.
func (r *Restore) save() error {
	if len(r.Steps()) == 0 {
		if err := os.Remove(r.File); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(r.File), 0o700); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(r.File), ".restore-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), r.File)
}

// PendingRestores reads every state file, oldest first. A missing folder
// means nothing is pending; an unreadable file is an error naming it.
func PendingRestores() ([]*Restore, error) {
	dir, err := StateDir()
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []*Restore
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue // restored meanwhile by another process
		}
		r := &Restore{File: f}
		if err == nil {
			err = json.Unmarshal(data, r)
		}
		if err != nil {
			return out, fmt.Errorf("read state file %s: %w", f, err)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Restore) int { return a.Since.Compare(b.Since) })
	return out, nil
}

// ErrRestoreBusy means another process is applying the same restore.
var ErrRestoreBusy = errors.New("being restored by another rmqtorture process")

// Apply undoes what r records, holding an exclusive lock on its state file
// (flock(2), released if this process dies) so two processes never apply
// it together, and removes the file once done. It returns the steps it
// took; a container that no longer exists needs none. Call it only when
// r.Owner is not Alive. On an error the file stays for the next attempt.
func (r *Restore) Apply(ctx context.Context, cli *client.Client) ([]string, error) {
	f, err := os.OpenFile(r.File, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := lockExclusive(f.Fd()); err != nil {
		return nil, ErrRestoreBusy
	}
	if _, err := os.Stat(r.File); errors.Is(err, fs.ErrNotExist) {
		return nil, nil // applied and removed while we opened it
	}
	done, err := r.undo(ctx, cli)
	if err != nil {
		return done, fmt.Errorf("restore container %s: %w", r.Name, err)
	}
	return done, os.Remove(r.File)
}

// undo plays the steps on the container as it is now: unpause if paused,
// start if not running, connect to each recorded network it is not on, and
// set the watermark back if the node kept running (a start resets it to the
// node's configuration anyway).
func (r *Restore) undo(ctx context.Context, cli *client.Client) ([]string, error) {
	info, err := cli.ContainerInspect(ctx, r.Container)
	if client.IsErrNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var done []string
	running := info.State != nil && info.State.Running
	if r.Unpause && info.State != nil && info.State.Paused {
		if err := cli.ContainerUnpause(ctx, r.Container); err != nil {
			return done, err
		}
		done = append(done, "unpaused")
	}
	started := false
	// Only a container rmqtorture itself left stopped is started: one the
	// user stopped since is theirs to keep stopped.
	if !running && r.Start {
		if err := cli.ContainerStart(ctx, r.Container, container.StartOptions{}); err != nil {
			return done, err
		}
		done, started = append(done, "started"), true
	}
	for _, n := range r.Reconnect {
		if info.NetworkSettings != nil && info.NetworkSettings.Networks[n] != nil {
			continue
		}
		if err := cli.NetworkConnect(ctx, n, r.Container, nil); err != nil {
			return done, err
		}
		done = append(done, "reconnected to network "+n)
	}
	// A watermark lives in the running node: one stopped since then has
	// dropped it, and a restart (ours) reads its configuration again.
	if r.Watermark != "" && !started && running {
		c := &Container{cli: cli, log: slog.New(slog.NewTextHandler(io.Discard, nil)), ID: r.Container, Name: r.Name}
		xctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := c.Exec(xctx, "rabbitmqctl", "-q", "eval", "ok = vm_memory_monitor:set_vm_memory_high_watermark("+r.Watermark+")."); err != nil {
			return done, err
		}
		done = append(done, "vm_memory_high_watermark set back to "+r.Watermark)
	}
	// A stopped application (stop_app) lives in the running node too: a
	// start boots it anyway.
	if len(r.Commands) > 0 && !started && running {
		c := &Container{cli: cli, log: slog.New(slog.NewTextHandler(io.Discard, nil)), ID: r.Container, Name: r.Name}
		for _, argv := range r.Commands {
			if !knownRecovery(argv) {
				return done, fmt.Errorf("the restore record asks to run %q, which is no fault action's recovery: not run", strings.Join(argv, " "))
			}
			xctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			_, err := c.Exec(xctx, argv...)
			cancel()
			if err != nil {
				return done, err
			}
			done = append(done, "ran "+strings.Join(argv, " "))
		}
	}
	return done, nil
}

// attachment is what a container rmqtorture did not create keeps about the
// changes its faults make: the kinds of fault already warned of and the
// pending restore.
type attachment struct {
	mu     sync.Mutex
	warned map[string]bool
	r      *Restore
}

// alter is called before a fault changes a container rmqtorture did not
// create (it does nothing for one it created). The first time for each
// kind of fault it warns that the container will be verb; set then records
// in the state file how to undo the change, so that the next run or
// cleanup can if this process dies before the fault's own recovery. When
// the record cannot be written the fault is refused: rmqtorture does not
// change a container it could not promise to restore.
func (c *Container) alter(verb string, set func(*Restore)) error {
	a := c.attached
	if c.Owned || a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.r == nil {
		dir, err := StateDir()
		if err != nil {
			return fmt.Errorf("refusing to alter container %q, which rmqtorture did not create: %w", c.Name, err)
		}
		a.r = &Restore{Container: c.ID, Name: c.Name, Owner: Self(), Since: time.Now(),
			File: filepath.Join(dir, fmt.Sprintf("%s-%d.json", c.ID[:min(12, len(c.ID))], Self().PID))}
	}
	if !a.warned[verb] {
		a.warned[verb] = true
		c.log.Warn(fmt.Sprintf("acting on container %s, which rmqtorture did not create: it will be %s; if rmqtorture dies before restoring it, the next `rmqtorture run` or `rmqtorture cleanup` will (recorded in %s)", c.Name, verb, a.r.File))
	}
	if set == nil {
		return nil
	}
	set(a.r)
	if err := a.r.save(); err != nil {
		return fmt.Errorf("refusing to alter container %q, which rmqtorture did not create: record how to restore it: %w", c.Name, err)
	}
	return nil
}

// undone records that a recovery step undid a change on a container
// rmqtorture did not create (clear edits the record); the state file goes
// once nothing is left to undo.
func (c *Container) undone(clear func(*Restore)) {
	a := c.attached
	if c.Owned || a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.r == nil {
		return
	}
	clear(a.r)
	if err := a.r.save(); err != nil {
		c.log.Warn("update the restore record", "file", a.r.File, "err", err)
	}
}

// pendingSteps lists what is still to undo on an attached container, for
// the message of a process that exits at once.
func (c *Container) pendingSteps() (file string, steps []string) {
	a := c.attached
	if c.Owned || a == nil {
		return "", nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.r == nil {
		return "", nil
	}
	return a.r.File, a.r.Steps()
}
