package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// process is one child process of the stack, restartable.
type process struct {
	name   string
	args   []string
	env    []string
	logDir string
	cmd    *exec.Cmd
	exited chan struct{}
}

func (p *process) start() error {
	log, err := os.OpenFile(filepath.Join(p.logDir, p.name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	p.cmd = exec.Command(p.args[0], p.args[1:]...)
	p.cmd.Env = environ(p.env)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.exited = make(chan struct{})
	go func() { _ = p.cmd.Wait(); log.Close(); close(p.exited) }()
	return nil
}

// environ is the environment of a process of the stack: this process's,
// then env, which wins. The inherited AUTH_* settings are left out: the
// stack's API verifies the tokens of the suite's own issuer, and an
// inherited AUTH_JWKS_URL beside its AUTH_JWKS_FILE would be refused.
func environ(env []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AUTH_") {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}

// kill9 kills the process with SIGKILL, as a crash would.
func (p *process) kill9() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// stop asks the process to stop (SIGTERM), then kills it after 20 s.
func (p *process) stop() { p.terminate() }

// terminate asks the process to stop (SIGTERM) and waits for it; after 20 s
// it kills it (killed). code is the exit status.
func (p *process) terminate() (code int, killed bool) {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0, false
	}
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode(), false
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		p.kill9()
		killed = true
	}
	return p.cmd.ProcessState.ExitCode(), killed
}
