package relevance

import "math"

// Plain readings of a model, the references its fast paths are tested
// against.

// cosine is the cosine between l's words and the same words of v (v's
// words are of unit length already), each word looked up by binary
// search: what Explain's merge pass (Model.cosine) and the feedback's
// part of Score compute.
func (l *like) cosine(v *Vector) float32 {
	var dot, norm float64
	for i, f := range l.feats {
		x := float64(l.vals[i]) / 255
		norm += x * x
		dot += x * float64(v.value(f))
	}
	if norm == 0 {
		return 0
	}
	return float32(dot / math.Sqrt(norm))
}

// plainFeedback is score s of the paper of v plus m's feedback part (see
// Model.Score), read like by like with a scan of each like's words for
// each of v's words, the sums taken in the same order as Score's: the
// same float32 to the bit. moved says whether a marked like shares a word
// with v.
func plainFeedback(m *Model, v *Vector, s float32) (score float32, moved bool) {
	var more, less float32
	itself := false
	for _, l := range m.likes {
		var sign float32
		switch {
		case l.kind == kindMarked && m.moreLift > 0:
			sign = 1
		case l.kind == kindLess && m.lessPenalty > 0:
			sign = -1
		default:
			continue
		}
		var norm float64
		for j := range l.feats {
			x := float32(l.vals[j]) / 255
			norm += float64(x) * float64(x)
		}
		var dot float32
		for i, f := range v.feats {
			for j, g := range l.feats {
				if g == f && v.ns[i] == nsWord {
					moved = true
					x := float32(l.vals[j]) / 255
					dot += x * v.vals[i]
				}
			}
		}
		n := float32(math.Sqrt(norm))
		if n == 0 {
			continue
		}
		c := max(dot/n-m.feedbackLike, 0) / (1 - m.feedbackLike)
		if sign > 0 {
			more += c
		} else {
			less += c
			itself = itself || dot > 0 && l.id == v.paper.ID && l.id != ""
		}
	}
	if !moved {
		return s, false
	}
	s = s + m.moreLift*min(more, 1) - m.lessPenalty*min(less, 1)
	if itself {
		s -= MarkedLessDrop
	}
	return s, true
}
