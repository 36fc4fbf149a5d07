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
	c := cpuUse{pg: map[int]time.Duration{}, Machine: MachineCPU()}
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
		if t, comm, ok := procCPU(pid); ok && comm == "postgres" {
			c.pg[pid] = t
		}
	}
	return c
}

// MachineCPU is the busy CPU time of the whole machine since boot, summed
// over its cores (Linux's /proc/stat; zero elsewhere).
func MachineCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	// cpu  user nice system idle iowait irq softirq steal guest guest_nice:
	// busy is user, nice, system, irq and softirq (guest time is already
	// in user and nice; steal is another machine's).
	var busy time.Duration
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
	for _, i := range []int{1, 2, 3, 6, 7} {
		if i < len(f) {
			n, _ := strconv.ParseInt(f[i], 10, 64)
			busy += time.Duration(n) * clockTick
		}
	}
	return busy
}

// ProcessCPU is the CPU time (user + system) process pid has used, from
// /proc/<pid>/stat; false when it cannot be read (gone, or not Linux).
func ProcessCPU(pid int) (time.Duration, bool) {
	t, _, ok := procCPU(pid)
	return t, ok
}

// ChildrenCPU is the CPU time of process pid and of its children alive
// now (children that exited are missed), e.g. a PostgreSQL postmaster and
// its backends.
func ChildrenCPU(pid int) time.Duration {
	total, _, _ := procCPU(pid)
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f, _, ok := procStat(child); ok && f[1] == strconv.Itoa(pid) {
			total += statCPU(f)
		}
	}
	return total
}

// procCPU reads a process's CPU time and command name.
func procCPU(pid int) (time.Duration, string, bool) {
	f, comm, ok := procStat(pid)
	if !ok {
		return 0, "", false
	}
	return statCPU(f), comm, true
}

// procStat reads /proc/<pid>/stat: the fields after "(comm) " (state is
// 0, ppid 1, utime 11, stime 12) and the command name.
func procStat(pid int) ([]string, string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, "", false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndex(s, ")")
	if open < 0 || end < open || end+2 > len(s) {
		return nil, "", false
	}
	f := strings.Fields(s[end+2:])
	if len(f) < 13 {
		return nil, "", false
	}
	return f, s[open+1 : end], true
}

// statCPU is utime + stime of procStat's fields.
func statCPU(f []string) time.Duration {
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * clockTick
}
