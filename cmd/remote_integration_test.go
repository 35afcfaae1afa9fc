package cmd

import (
	"bufio"
	"github.com/rmqtorture/rmqtorture/redact"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// remoteEnginesEnv is where scripts/remote-engines.sh writes the engines it
// set up (RMQT_REMOTE_STATE overrides the folder, as for the script).
func remoteEnginesEnv() string {
	dir := os.Getenv("RMQT_REMOTE_STATE")
	if dir == "" {
		dir = "/var/lib/rmqt-remote-engines"
	}
	return filepath.Join(dir, "env")
}

// remoteEngine returns the KEY=VALUE pairs scripts/remote-engines.sh
// wrote, skipping the test when the script has not run (.ci/run runs it).
func remoteEngine(t *testing.T) map[string]string {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs Docker, the broker image and scripts/remote-engines.sh")
	}
	f, err := os.Open(remoteEnginesEnv())
	if err != nil {
		t.Skipf("the remote engines are not set up (%v): run scripts/remote-engines.sh first", err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return env
}

// killMidBurstOn runs kill-mid-burst (n orders, confirm-window only: the
// point is the engine, and the local tests cover every mode) against the
// engine DOCKER_HOST names, with ports published on and traffic sent to
// --broker-address 127.0.0.1, and checks what the local runs promise: one
// kill at n/2 published, no confirmed order lost, every class adding up to
// n, a passing verdict, and no container left on that engine. It returns
// stderr. The result names the engine: host (its password masked; ""
// for a Docker context's) and the product it reports.
func killMidBurstOn(t *testing.T, host, product string) string {
	t.Helper()
	const n = 2000
	code, stdout, stderr := runCLI(t, "run", "kill-mid-burst", "-f", "../scenarios.yaml", "--out", t.TempDir(),
		"--messages", "2000", "--mode", "confirm-window", "--broker-address", "127.0.0.1", "--log-format", "text")
	t.Log("\n" + stdout)
	if code != ExitPass {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	r := readResult(t, stdout)
	checkNoContainerLeft(t, r.RunID)
	if !strings.HasPrefix(r.Engine, redact.URL(host)) || !strings.Contains(r.Engine, " ("+product+" ") {
		t.Errorf("engine %q, want %s (%s …)", r.Engine, redact.URL(host), product)
	}
	if r.Verdict.Status != scenario.Pass || len(r.Modes) != 1 {
		t.Fatalf("verdict %+v, %d modes", r.Verdict, len(r.Modes))
	}
	for _, m := range r.Modes {
		if m.Sent != n || m.ClassSum() != n || m.Unexpected != 0 || m.Nacked != 0 {
			t.Errorf("%s: sent %d, classes add up to %d, unexpected %d, nacked %d; want %d, %d, 0, 0", m.Mode, m.Sent, m.ClassSum(), m.Unexpected, m.Nacked, n, n)
		}
		if len(m.Faults) != 1 || m.Faults[0].AtPublished != n/2 || m.Faults[0].Error != "" {
			t.Errorf("%s: faults %+v, want one kill at %d published", m.Mode, m.Faults, n/2)
		}
		if m.Lost != 0 || m.Confirmed+m.InDoubt+m.Returned != n {
			t.Errorf("%s: lost %d, confirmed %d + in doubt %d + returned %d != %d", m.Mode, m.Lost, m.Confirmed, m.InDoubt, m.Returned, n)
		}
	}
	return stderr
}

// TestRunOverSSH runs kill-mid-burst on an engine reached as the Docker CLI
// reaches one over ssh (DOCKER_HOST=ssh://root@127.0.0.1:PORT: `ssh …
// docker system dial-stdio`), with the key and known host the setup script
// made, handed to ssh through its config file.
func TestRunOverSSH(t *testing.T) {
	env := remoteEngine(t)
	t.Setenv("PATH", env["RMQT_SSH_PATH"]+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("DOCKER_HOST", env["RMQT_SSH_HOST"])
	stderr := killMidBurstOn(t, env["RMQT_SSH_HOST"], "Docker Engine")
	if want := "host=" + env["RMQT_SSH_HOST"]; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks the engine's %q:\n%s", want, stderr)
	}
}

// TestRunOverTCP runs kill-mid-burst on an engine reached over
// DOCKER_HOST=tcp://127.0.0.1:PORT.
func TestRunOverTCP(t *testing.T) {
	env := remoteEngine(t)
	t.Setenv("DOCKER_HOST", env["RMQT_TCP_HOST"])
	killMidBurstOn(t, env["RMQT_TCP_HOST"], "Docker Engine")
}

// TestRunOverTLS runs kill-mid-burst on an engine reached over
// DOCKER_HOST=tcp://127.0.0.1:PORT behind mutual TLS, with the client
// certificate, key and CA that DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH
// name, as the Docker CLI reads them; without them the same address is
// refused before anything starts (the handshake wants a client
// certificate), and the error names the engine.
func TestRunOverTLS(t *testing.T) {
	env := remoteEngine(t)
	if env["RMQT_TLS_HOST"] == "" {
		t.Skip("the TLS relay is not set up: run scripts/remote-engines.sh first")
	}
	t.Setenv("DOCKER_HOST", env["RMQT_TLS_HOST"])
	t.Setenv("DOCKER_TLS_VERIFY", "")
	t.Setenv("DOCKER_CERT_PATH", "")
	code, _, stderr := runCLI(t, "run", "kill-mid-burst", "-f", "../scenarios.yaml", "--out", t.TempDir(), "--messages", "2000")
	if want := "cannot reach the Docker Engine at " + env["RMQT_TLS_HOST"]; code != ExitError || !strings.Contains(stderr, want) {
		t.Fatalf("without the client certificate: exit %d, stderr %q; want %d and %q", code, stderr, ExitError, want)
	}
	t.Setenv("DOCKER_TLS_VERIFY", "1")
	t.Setenv("DOCKER_CERT_PATH", env["RMQT_TLS_CERT_PATH"])
	killMidBurstOn(t, env["RMQT_TLS_HOST"], "Docker Engine")
}

// TestRunOverDockerContext runs kill-mid-burst with no DOCKER_HOST, on the
// engine a Docker CLI context names, the contexts made by the docker CLI
// itself (`docker context create`, `docker context use`) in a DOCKER_CONFIG
// folder of the test's: the context `use` chose (the TLS relay without its
// certificate) is refused before anything starts, naming the engine and the
// context; a DOCKER_CONTEXT that does not exist is refused too, naming it;
// DOCKER_CONTEXT then names one that holds the TLS relay's CA,
// certificate and key in the context store, and the run passes on it.
func TestRunOverDockerContext(t *testing.T) {
	env := remoteEngine(t)
	if env["RMQT_TLS_HOST"] == "" {
		t.Skip("the TLS relay is not set up: run scripts/remote-engines.sh first")
	}
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONTEXT", "")
	t.Setenv("DOCKER_TLS_VERIFY", "")
	t.Setenv("DOCKER_CERT_PATH", "")
	certs := env["RMQT_TLS_CERT_PATH"]
	for _, args := range [][]string{
		{"context", "create", "rmqt-tls", "--docker", "host=" + env["RMQT_TLS_HOST"] + ",ca=" + certs + "/ca.pem,cert=" + certs + "/cert.pem,key=" + certs + "/key.pem"},
		{"context", "create", "rmqt-no-cert", "--docker", "host=" + env["RMQT_TLS_HOST"]},
		{"context", "use", "rmqt-no-cert"},
	} {
		if out, err := exec.Command("docker", args...).CombinedOutput(); err != nil {
			t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	code, _, stderr := runCLI(t, "run", "kill-mid-burst", "-f", "../scenarios.yaml", "--out", t.TempDir(), "--messages", "2000")
	if want := "cannot reach the Docker Engine at " + env["RMQT_TLS_HOST"] + " (Docker context rmqt-no-cert)"; code != ExitError || !strings.Contains(stderr, want) {
		t.Fatalf("context rmqt-no-cert: exit %d, stderr %q; want %d and %q", code, stderr, ExitError, want)
	}
	t.Setenv("DOCKER_CONTEXT", "rmqt-nosuch")
	code, _, stderr = runCLI(t, "run", "kill-mid-burst", "-f", "../scenarios.yaml", "--out", t.TempDir(), "--messages", "2000")
	if want := `Docker context rmqt-nosuch: context "rmqt-nosuch": context not found`; code != ExitError || !strings.Contains(stderr, want) {
		t.Fatalf("DOCKER_CONTEXT=rmqt-nosuch: exit %d, stderr %q; want %d and %q", code, stderr, ExitError, want)
	}
	t.Setenv("DOCKER_CONTEXT", "rmqt-tls")
	stderr = killMidBurstOn(t, "", "Docker Engine")
	if want := "host=\"" + env["RMQT_TLS_HOST"] + " (Docker context rmqt-tls)\""; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks the engine %s:\n%s", want, stderr)
	}
}

// TestRunOnPodman runs kill-mid-burst on Podman through its
// Docker-compatible API socket, the broker image loaded into Podman.
func TestRunOnPodman(t *testing.T) {
	env := remoteEngine(t)
	t.Setenv("DOCKER_HOST", env["RMQT_PODMAN_HOST"])
	killMidBurstOn(t, env["RMQT_PODMAN_HOST"], "Podman Engine")
}

// TestDockerHostPasswordNeverPrinted: a DOCKER_HOST that carries a password
// (which neither ssh:// nor tcp:// uses) fails to connect, and the error
// names the engine with the password masked.
func TestDockerHostPasswordNeverPrinted(t *testing.T) {
	for host, want := range map[string]string{
		"tcp://alice:S3cretPw@127.0.0.1:1": "cannot reach the Docker Engine at tcp://alice:xxxxx@127.0.0.1:1",
		"ssh://alice:S3cretPw@127.0.0.1:1": "DOCKER_HOST=ssh://alice:xxxxx@127.0.0.1:1: ssh host connection is not valid: invalid SSH URL: plain-text password is not supported",
	} {
		t.Setenv("DOCKER_HOST", host)
		code, stdout, stderr := runCLI(t, "run", "kill-mid-burst", "-f", "../scenarios.yaml", "--out", t.TempDir())
		if code != ExitError || !strings.Contains(stderr, want) || strings.Contains(stdout+stderr, "S3cretPw") {
			t.Errorf("DOCKER_HOST %s: exit %d, stdout %q, stderr %q; want exit 1 and %q, never the password", host, code, stdout, stderr, want)
		}
	}
}
