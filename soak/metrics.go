package soak

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// metrics is one scrape of a process's /metrics (Prometheus text format):
// every sample by its series, `name{label="value",…}` with the labels in
// the order the process wrote them (client_golang sorts them by name).
type metrics map[string]float64

// parseMetrics reads the samples of a Prometheus text exposition; comments
// and lines it cannot read are skipped.
func parseMetrics(text string) metrics {
	m := metrics{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		// The value follows the series, after the labels' closing brace
		// when there are labels (their values may hold spaces).
		series, rest := line, ""
		if end := strings.LastIndexByte(line, '}'); end >= 0 {
			series, rest = line[:end+1], line[end+1:]
		} else if i := strings.IndexAny(line, " \t"); i >= 0 {
			series, rest = line[:i], line[i:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		m[strings.TrimSpace(series)] = v
	}
	return m
}

// get returns the sample of name with exactly the labels given as
// "key", "value" pairs (0 when absent).
func (m metrics) get(name string, labels ...string) float64 {
	return m[seriesKey(name, labels...)]
}

// seriesKey is the series name{k="v",…} with the labels sorted by name, as
// client_golang writes them.
func seriesKey(name string, labels ...string) string {
	if len(labels) == 0 {
		return name
	}
	var pairs []string
	for i := 0; i+1 < len(labels); i += 2 {
		pairs = append(pairs, labels[i]+"="+strconv.Quote(labels[i+1]))
	}
	slices.Sort(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

// sub is m − o, sample by sample (counters' increase between two scrapes).
func (m metrics) sub(o metrics) metrics {
	d := metrics{}
	for k, v := range m {
		d[k] = v - o[k]
	}
	return d
}

// scrape reads the /metrics of the process at c.
func (c *client) scrape(ctx context.Context) (metrics, error) {
	r := c.do(ctx, "GET", "/metrics", "", nil, nil)
	if r.err != nil {
		return nil, fmt.Errorf("GET /metrics: %w", r.err)
	}
	if r.status != 200 {
		return nil, fmt.Errorf("GET /metrics: status %d", r.status)
	}
	return parseMetrics(string(r.body)), nil
}
