package relevance

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// magic starts every encoded model.
const magic = "ffrm"

// ErrVersion is returned (wrapped) by UnmarshalBinary for a model of
// another format Version: train the user's model again.
var ErrVersion = errors.New("relevance: model of another version")

// MarshalBinary encodes m compactly for one bytea row: features as
// delta-coded hashes, weights as 16-bit integers with one scale, the
// non-learned features' kinds, the followed persons' names and the likes'
// words (some 4 bytes a feature: a model of 1,500 features is about 7
// KB). The encoding starts with Version; UnmarshalBinary of it gives a
// model that scores and explains exactly as m does.
func (m *Model) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 32+4*len(m.feats)+64*len(m.likes))
	b = append(b, magic...)
	b = binary.AppendUvarint(b, Version)
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(m.bias))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(m.scale))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(m.likeThreshold))
	for _, x := range [...]float32{m.moreLift, m.lessPenalty, m.feedbackLike} {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	b = binary.AppendUvarint(b, uint64(len(m.feats)))
	var prev uint32
	for i, f := range m.feats {
		b = binary.AppendUvarint(b, uint64(f-prev))
		b = binary.LittleEndian.AppendUint16(b, uint16(m.q[i]))
		prev = f
	}
	var special int
	for _, k := range m.kinds {
		if k != kindLearned {
			special++
		}
	}
	b = binary.AppendUvarint(b, uint64(special))
	last := 0
	for i, k := range m.kinds {
		if k == kindLearned {
			continue
		}
		b = binary.AppendUvarint(b, uint64(i-last))
		b = append(b, byte(k))
		b = binary.AppendUvarint(b, uint64(m.of[i]))
		last = i
	}
	b = binary.AppendUvarint(b, uint64(len(m.people)))
	for _, p := range m.people {
		b = appendString(b, p.name)
		b = append(b, btoi(p.self))
	}
	b = binary.AppendUvarint(b, uint64(len(m.likes)))
	for _, l := range m.likes {
		b = appendString(b, l.id)
		b = append(b, byte(l.kind))
		b = binary.AppendUvarint(b, uint64(len(l.feats)))
		for i, f := range l.feats {
			b = binary.LittleEndian.AppendUint32(b, f)
			b = append(b, l.vals[i])
		}
	}
	return b, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func btoi(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// UnmarshalBinary decodes a model MarshalBinary encoded, replacing m. Data
// that is not such a model (truncated, altered, of another Version, over
// the limits Train keeps to) is an error, never a panic or a partly
// decoded m.
func (m *Model) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	if len(data) < len(magic) || string(data[:len(magic)]) != magic {
		return errors.New("relevance: not an encoded model")
	}
	d.b = d.b[len(magic):]
	if v := d.uvarint(); d.err == nil && v != Version {
		return fmt.Errorf("%w: version %d, this is version %d", ErrVersion, v, Version)
	}
	var n Model
	n.bias, n.scale, n.likeThreshold = d.float(), d.float(), d.float()
	n.moreLift, n.lessPenalty, n.feedbackLike = d.float(), d.float(), d.float()
	nf := d.count(maxModelFeatures)
	n.feats, n.q = d.features(nf)
	n.kinds = make([]kind, len(n.feats))
	n.of = make([]uint16, len(n.feats))
	ns := d.count(len(n.feats))
	at := 0
	for i := 0; i < ns && d.err == nil; i++ {
		delta := d.uvarint()
		k, of := kind(d.byte()), d.uvarint()
		if delta >= uint64(len(n.feats)) || i > 0 && delta == 0 {
			d.fail("bad feature kind")
			break
		}
		at += int(delta)
		if at >= len(n.feats) || k == kindLearned || k >= kindMarked || of >= maxPeople {
			d.fail("bad feature kind")
			break
		}
		n.kinds[at], n.of[at] = k, uint16(of)
	}
	np := d.count(maxPeople)
	for i := 0; i < np && d.err == nil; i++ {
		n.people = append(n.people, person{name: d.string(maxNameBytes), self: d.byte() == 1})
	}
	for i, k := range n.kinds {
		if (k == kindPerson || k == kindCoauthor) && int(n.of[i]) >= len(n.people) {
			d.fail("a feature names no person")
		}
	}
	nl := d.count(maxLikes)
	for i := 0; i < nl && d.err == nil; i++ {
		l := like{id: d.string(maxIDBytes), kind: kind(d.byte())}
		if l.kind != kindMarked && l.kind != kindFollowedPaper && l.kind != kindLess {
			d.fail("bad like kind")
		}
		k := d.count(likeWords)
		for j := 0; j < k && d.err == nil; j++ {
			l.feats = append(l.feats, d.uint32())
			l.vals = append(l.vals, d.byte())
		}
		n.likes = append(n.likes, l)
	}
	if d.err == nil && len(d.b) > 0 {
		d.fail("trailing bytes")
	}
	if d.err == nil && (isBad(n.bias) || isBad(n.scale) || isBad(n.likeThreshold) || isBad(n.moreLift) || isBad(n.lessPenalty) || isBad(n.feedbackLike)) {
		d.fail("not a number")
	}
	if d.err == nil && (n.moreLift < 0 || n.lessPenalty < 0 || !(n.feedbackLike >= 0 && n.feedbackLike < 1)) {
		d.fail("feedback weights out of range")
	}
	if d.err != nil {
		return fmt.Errorf("relevance: bad encoded model: %w", d.err)
	}
	n.build()
	*m = n
	return nil
}

func isBad(f float32) bool { return math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) }

// decoder reads an encoded model, remembering its first error (reads
// after it return zeros).
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(msg string) {
	if d.err == nil {
		d.err = errors.New(msg)
	}
	d.b = nil
}

// features reads n features and their weights (delta-coded hashes, each
// followed by its 16-bit weight), in one loop over the bytes without the
// per-field checks of uvarint and uint16: a digest batch decodes 50
// models of some 2,000 features each, and those calls were about half of
// the decoding (the weights' table aside) in make bench's profile.
func (d *decoder) features(n int) ([]uint32, []int16) {
	feats, q := make([]uint32, 0, n), make([]int16, 0, n)
	if d.err != nil {
		return feats, q
	}
	b := d.b
	var prev uint32
	for range n {
		delta, k := binary.Uvarint(b)
		if k <= 0 || len(b) < k+2 {
			d.fail("truncated")
			return feats, q
		}
		if delta == 0 || delta > math.MaxUint32-uint64(prev) {
			d.fail("features out of order")
			return feats, q
		}
		prev += uint32(delta)
		feats = append(feats, prev)
		q = append(q, int16(binary.LittleEndian.Uint16(b[k:])))
		b = b[k+2:]
	}
	d.b = b
	return feats, q
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("truncated")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of at most limit.
func (d *decoder) count(limit int) int {
	v := d.uvarint()
	if v > uint64(limit) {
		d.fail("a count over its limit")
		return 0
	}
	return int(v)
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.fail("truncated")
		return nil
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}

func (d *decoder) byte() byte {
	if s := d.take(1); s != nil {
		return s[0]
	}
	return 0
}

func (d *decoder) uint32() uint32 {
	if s := d.take(4); s != nil {
		return binary.LittleEndian.Uint32(s)
	}
	return 0
}

func (d *decoder) float() float32 { return math.Float32frombits(d.uint32()) }

func (d *decoder) string(max int) string {
	n := d.count(max)
	s := string(d.take(n))
	if !utf8.ValidString(s) {
		d.fail("a name of invalid UTF-8")
		return ""
	}
	return s
}
