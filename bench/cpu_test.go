package bench

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// The /proc users see CPU time being spent: this process's, its child's,
// and the machine's.
func TestProcessCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads Linux's /proc")
	}
	self0, ok := ProcessCPU(os.Getpid())
	if !ok {
		t.Fatal("cannot read this process's CPU time")
	}
	m0 := MachineCPU()
	// A child that counts in shell arithmetic (CPU in the shell itself, no
	// forks), says so, then sleeps until killed.
	child := exec.Command("sh", "-c", `i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo done; sleep 30`)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	// Spin until this process's CPU time has grown by 100 ms (a loaded
	// machine gives it less than the wall time).
	x := 0
	for start := time.Now(); ; x++ {
		if x%1_000_000 == 0 {
			if now, _ := ProcessCPU(os.Getpid()); now-self0 >= 100*time.Millisecond {
				break
			}
			if time.Since(start) > 20*time.Second {
				t.Fatal("this process's CPU time did not grow by 100 ms in 20 s of spinning")
			}
		}
	}
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	self1, _ := ProcessCPU(os.Getpid())
	childCPU, ok := ProcessCPU(child.Process.Pid)
	if !ok || childCPU < 30*time.Millisecond {
		t.Errorf("the child counted to 200,000 and used %s (readable %v)", childCPU, ok)
	}
	if all := ChildrenCPU(os.Getpid()); all < self1+childCPU-20*time.Millisecond {
		t.Errorf("ChildrenCPU %s, want at least this process's %s and the child's %s", all, self1, childCPU)
	}
	if m := MachineCPU() - m0; m < self1-self0 {
		t.Errorf("machine busy %s, less than this process's %s", m, self1-self0)
	}
	if _, ok := ProcessCPU(1 << 30); ok {
		t.Error("a process that does not exist has a CPU time")
	}
}
