package match

import (
	"sync"

	"github.com/jackc/pgx/v5"
)

// perDatabase is a process-wide value per database, by name: a process
// serves one database, whose primary and replicas hold the same rows;
// tests serve many, some cloned from one template, whose rows share ids
// and row versions, so a cache of rows by id must not be shared between
// them. Safe for concurrent use.
type perDatabase[T any] struct {
	mu   sync.Mutex
	of   map[string]T
	make func() T
}

// newPerDatabase returns a perDatabase whose value for a database is made
// by mk the first time it is asked for.
func newPerDatabase[T any](mk func() T) *perDatabase[T] {
	return &perDatabase[T]{of: map[string]T{}, make: mk}
}

// get returns the value of the database tx reads.
func (p *perDatabase[T]) get(tx pgx.Tx) T {
	name := tx.Conn().Config().Database
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.of[name]
	if !ok {
		v = p.make()
		p.of[name] = v
	}
	return v
}
