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
}

func (c cpuUse) sub(o cpuUse) cpuUse {
	return cpuUse{c.Machine - o.Machine, c.Self - o.Self, c.Postgres - o.Postgres}
}

// clockTick is USER_HZ, the unit of /proc's CPU counters; 100 on every
// Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

func readCPU() cpuUse {
	var c cpuUse
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		// cpu  user nice system idle iowait irq softirq steal ...
		f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
		for i, x := range f[1:] {
			if i == 3 || i == 4 { // idle, iowait
				continue
			}
			n, _ := strconv.ParseInt(x, 10, 64)
			c.Machine += time.Duration(n) * clockTick
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.Self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
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
		c.Postgres += time.Duration(u+k) * clockTick
	}
	return c
}
