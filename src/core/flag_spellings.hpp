// The spellings of a process-wide setting's choices, as the `xtrain` tool's
// flags take them (--cpu_algorithm_search=timed, --gpu_math=tf32, ...): one
// table per setting gives both to_string and the parse that refuses any
// other text.
#pragma once

#include <cstddef>
#include <string>

#include "xtrain/error.hpp"

namespace xtrain {

template <typename Choice>
struct ChoiceSpelling {
  Choice choice;
  const char* text;
};

// The text of `choice` (the first entry's for a value the table lacks).
template <typename Choice, std::size_t N>
std::string spelling_of(const ChoiceSpelling<Choice> (&spellings)[N], Choice choice) {
  for (const ChoiceSpelling<Choice>& spelling : spellings) {
    if (spelling.choice == choice) return spelling.text;
  }
  return spellings[0].text;
}

// The choice spelled `text`; otherwise an Error "<flag>=<text><refusal>",
// where `refusal` says what the choices are.
template <typename Choice, std::size_t N>
Choice parse_spelling(const ChoiceSpelling<Choice> (&spellings)[N], const std::string& text,
                      const char* flag, const char* refusal) {
  for (const ChoiceSpelling<Choice>& spelling : spellings) {
    if (text == spelling.text) return spelling.choice;
  }
  throw Error(detail::concat(flag, "=", text, refusal));
}

}  // namespace xtrain
