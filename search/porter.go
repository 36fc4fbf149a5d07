package search

// stem returns the Porter (1980) stem of a lower-case ASCII word; other
// words, and words of one or two letters, are returned unchanged. It is
// the classic algorithm (M. F. Porter, "An algorithm for suffix
// stripping"), with the published errata (abli→able is bli→ble, logi→log).
func stem(w string) string {
	if len(w) <= 2 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	s := &stemmer{b: []byte(w), k: len(w) - 1}
	s.step1ab()
	if s.k > 0 {
		s.step1c()
		s.step2()
		s.step3()
		s.step4()
		s.step5()
	}
	return string(s.b[:s.k+1])
}

type stemmer struct {
	b    []byte
	k, j int
}

func (s *stemmer) cons(i int) bool {
	switch s.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		if i == 0 {
			return true
		}
		return !s.cons(i - 1)
	}
	return true
}

// m counts the consonant-vowel sequences in b[0..j].
func (s *stemmer) m() int {
	n, i := 0, 0
	for {
		if i > s.j {
			return n
		}
		if !s.cons(i) {
			break
		}
		i++
	}
	i++
	for {
		for {
			if i > s.j {
				return n
			}
			if s.cons(i) {
				break
			}
			i++
		}
		i++
		n++
		for {
			if i > s.j {
				return n
			}
			if !s.cons(i) {
				break
			}
			i++
		}
		i++
	}
}

func (s *stemmer) vowelInStem() bool {
	for i := 0; i <= s.j; i++ {
		if !s.cons(i) {
			return true
		}
	}
	return false
}

func (s *stemmer) doublec(j int) bool {
	return j >= 1 && s.b[j] == s.b[j-1] && s.cons(j)
}

func (s *stemmer) cvc(i int) bool {
	if i < 2 || !s.cons(i) || s.cons(i-1) || !s.cons(i-2) {
		return false
	}
	switch s.b[i] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

func (s *stemmer) ends(suf string) bool {
	l := len(suf)
	if l > s.k+1 || string(s.b[s.k-l+1:s.k+1]) != suf {
		return false
	}
	s.j = s.k - l
	return true
}

func (s *stemmer) setto(r string) {
	s.b = append(s.b[:s.j+1], r...)
	s.k = s.j + len(r)
}

func (s *stemmer) r(r string) {
	if s.m() > 0 {
		s.setto(r)
	}
}

func (s *stemmer) step1ab() {
	if s.b[s.k] == 's' {
		switch {
		case s.ends("sses"):
			s.k -= 2
		case s.ends("ies"):
			s.setto("i")
		case s.b[s.k-1] != 's':
			s.k--
		}
	}
	if s.ends("eed") {
		if s.m() > 0 {
			s.k--
		}
	} else if (s.ends("ed") || s.ends("ing")) && s.vowelInStem() {
		s.k = s.j
		switch {
		case s.ends("at"):
			s.setto("ate")
		case s.ends("bl"):
			s.setto("ble")
		case s.ends("iz"):
			s.setto("ize")
		case s.doublec(s.k):
			s.k--
			switch s.b[s.k] {
			case 'l', 's', 'z':
				s.k++
			}
		default:
			s.j = s.k
			if s.m() == 1 && s.cvc(s.k) {
				s.setto("e")
			}
		}
	}
	s.b = s.b[:s.k+1]
}

func (s *stemmer) step1c() {
	if s.ends("y") && s.vowelInStem() {
		s.b[s.k] = 'i'
	}
}

// rules tries each (suffix, replacement) pair and applies the first whose
// suffix ends the word, when the stem before it has m() > 0.
func (s *stemmer) rules(pairs ...string) {
	for i := 0; i < len(pairs); i += 2 {
		if s.ends(pairs[i]) {
			s.r(pairs[i+1])
			return
		}
	}
}

func (s *stemmer) step2() {
	switch s.b[s.k-1] {
	case 'a':
		s.rules("ational", "ate", "tional", "tion")
	case 'c':
		s.rules("enci", "ence", "anci", "ance")
	case 'e':
		s.rules("izer", "ize")
	case 'l':
		s.rules("bli", "ble", "alli", "al", "entli", "ent", "eli", "e", "ousli", "ous")
	case 'o':
		s.rules("ization", "ize", "ation", "ate", "ator", "ate")
	case 's':
		s.rules("alism", "al", "iveness", "ive", "fulness", "ful", "ousness", "ous")
	case 't':
		s.rules("aliti", "al", "iviti", "ive", "biliti", "ble")
	case 'g':
		s.rules("logi", "log")
	}
}

func (s *stemmer) step3() {
	switch s.b[s.k] {
	case 'e':
		s.rules("icate", "ic", "ative", "", "alize", "al")
	case 'i':
		s.rules("iciti", "ic")
	case 'l':
		s.rules("ical", "ic", "ful", "")
	case 's':
		s.rules("ness", "")
	}
}

func (s *stemmer) step4() {
	if s.k < 1 {
		return
	}
	found := false
	switch s.b[s.k-1] {
	case 'a':
		found = s.ends("al")
	case 'c':
		found = s.ends("ance") || s.ends("ence")
	case 'e':
		found = s.ends("er")
	case 'i':
		found = s.ends("ic")
	case 'l':
		found = s.ends("able") || s.ends("ible")
	case 'n':
		found = s.ends("ant") || s.ends("ement") || s.ends("ment") || s.ends("ent")
	case 'o':
		if s.ends("ion") && s.j >= 0 && (s.b[s.j] == 's' || s.b[s.j] == 't') {
			found = true
		} else {
			found = s.ends("ou")
		}
	case 's':
		found = s.ends("ism")
	case 't':
		found = s.ends("ate") || s.ends("iti")
	case 'u':
		found = s.ends("ous")
	case 'v':
		found = s.ends("ive")
	case 'z':
		found = s.ends("ize")
	}
	if found && s.m() > 1 {
		s.k = s.j
	}
}

func (s *stemmer) step5() {
	s.j = s.k
	if s.b[s.k] == 'e' {
		a := s.m()
		if a > 1 || a == 1 && !s.cvc(s.k-1) {
			s.k--
		}
	}
	if s.b[s.k] == 'l' && s.doublec(s.k) && s.m() > 1 {
		s.k--
	}
}
