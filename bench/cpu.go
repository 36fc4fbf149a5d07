package bench

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuUse is CPU time (user + system) read from Linux's /proc: the whole
// machine, this process (the code under measurement plus the in-process SMTP
// sink) and the PostgreSQL processes on this machine. Off Linux, or with a
// remote database, the missing parts read as zero.
type cpuUse struct {
	Machine, Self, Postgres time.Duration
	pg                      map[int]time.Duration // per PostgreSQL process
}

// sub is the CPU used between o and c. PostgreSQL's share is summed over
// the processes alive at c (a process started since o counts in full);
// processes that exited in between (an autovacuum worker, say) are missed.
func (c cpuUse) sub(o cpuUse) cpuUse {
	d := cpuUse{Machine: c.Machine - o.Machine, Self: c.Self - o.Self}
	for pid, t := range c.pg {
		d.Postgres += t - o.pg[pid]
	}
	return d
}

// clockTick is USER_HZ, the unit of /proc's CPU counters; 100 on every
// Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

func readCPU() cpuUse {
	c := cpuUse{pg: map[int]time.Duration{}}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		// cpu  user nice system idle iowait irq softirq steal guest guest_nice:
		// busy is user, nice, system, irq and softirq (guest time is already
		// in user and nice; steal is another machine's).
		f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
		for _, i := range []int{1, 2, 3, 6, 7} {
			if i < len(f) {
				n, _ := strconv.ParseInt(f[i], 10, 64)
				c.Machine += time.Duration(n) * clockTick
			}
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.Self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil || !strings.Contains(string(b), "(postgres)") {
			continue
		}
		// Fields after "(comm) ": state is 0, utime 11, stime 12.
		f := strings.Fields(string(b)[strings.LastIndex(string(b), ")")+2:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		k, _ := strconv.ParseInt(f[12], 10, 64)
		c.pg[pid] = time.Duration(u+k) * clockTick
	}
	return c
}
