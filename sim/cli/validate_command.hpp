#pragma once
// `trainsim validate`: predict published runs and compare with what was measured. The options and
// printing of plan::validate (sim/plan/validate.hpp), which runs the cases.
//
//   trainsim validate validation/training --backend analytic [--tolerance 10] [--format table|json|csv]
//
// A validation case is a scenario with an "expect" block (sim/plan/scenario.hpp, Expectation) giving
// one or more measured figures: iteration_time_s, model_tflops_per_gpu, tokens_per_s, mfu,
// hardware_tflops_per_gpu. Each is compared with the report field of the same name
// ("trainsim.report/1", report_json). The case is *judged* on one figure: iteration_time_s when
// given, else the first given of model_tflops_per_gpu, tokens_per_s, mfu, hardware_tflops_per_gpu.
// The others are printed beside it (table: rows marked "(not judged)") and count neither in the
// summary nor against --tolerance.
//
// Error of every figure: predicted / measured - 1. "+" means the prediction is the higher number:
// a slower iteration for iteration_time_s, a faster one for the throughputs (everything else). Each
// row says which in words ("slower" / "faster"). The summary is over the judged figures: median,
// mean and max of |error|, and how many are outside --tolerance.
//
// Every case gets a row. A case that cannot be read or run (unknown key, impossible configuration,
// no measured figure, missing file) is an error row with every problem as core::InputError prints
// it (file: /json/pointer: message); a bug inside one case (core::InternalError or any other
// exception) is an error row too. The other cases still run. The problems also go to `err`.
//
// Exit code, after the whole table: 1 when any case hit an internal error (a bug, whatever else
// happened), else 2 when any case could not be read or run, else 3 when a judged figure is outside
// --tolerance, else 0.
//
// With the SimGrid backend each case runs in a child process of its own (SimGrid builds one
// platform per process and the cases' clusters differ).

#include <functional>
#include <ostream>
#include <string>

#include "sim/cli/commands.hpp"
#include "sim/plan/validate.hpp"
#include "sim/core/json_reader.hpp"

namespace trainsim::cli {

// validate_command with another predictor than plan::predict_report (tests: a predictor that throws,
// or fixed reports).
int validate_command(const ValidateArgs& args, const plan::CasePredictor& predictor, std::ostream& out, std::ostream& err);

}  // namespace trainsim::cli
