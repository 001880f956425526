// app::LiveRun without a window: a scenario recorded by a hookscope-cli child
// (Note [The GUI runs no scenario]), handed out as models of what it wrote;
// the last one holds the whole run.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "live_run.h"

using namespace hookscope;

TEST_CASE("live run: polls hand out growing models, then the finished run once") {
  scenarios::ScenarioArgs args;
  args.scenario = "autograd-demo";
  args.steps = 30;
  app::LiveRun run;
  CHECK_FALSE(run.active());
  run.start(args, "live: autograd-demo", HOOKSCOPE_CLI_PATH);
  CHECK(run.active());
  size_t last = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!run.finished() && std::chrono::steady_clock::now() < deadline) {
    if (auto u = run.poll(false)) {
      REQUIRE(u->error.empty());
      REQUIRE(u->model);
      CHECK(u->model->num_events() >= last);  // the run so far, never less
      last = u->model->num_events();
      CHECK(u->model->trace(0).source == "live: autograd-demo");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(run.finished());
  CHECK(last > 100);
  CHECK_FALSE(run.result().empty());   // what the scenario said at its end
  CHECK_FALSE(run.poll(true).has_value());  // nothing after the finished run
  run.stop();
  CHECK_FALSE(run.active());
}

TEST_CASE("live run: poll(true) waits for the run and returns all of it at once") {
  scenarios::ScenarioArgs args;
  args.scenario = "autograd-demo";
  args.steps = 5;
  app::LiveRun run;
  run.start(args, "live", HOOKSCOPE_CLI_PATH);
  auto u = run.poll(true);
  REQUIRE(u.has_value());
  REQUIRE(u->model);
  CHECK(run.finished());
  CHECK(u->model->num_events() > 10);
}

TEST_CASE("live run: a hookscope-cli that is not there is an error that says how to record") {
  scenarios::ScenarioArgs args;
  args.scenario = "autograd-demo";
  app::LiveRun run;
  run.start(args, "live", "/nonexistent/hookscope-cli");
  auto u = run.poll(true);
  REQUIRE(u.has_value());
  CHECK_FALSE(u->model);
  CHECK(u->error.find("/nonexistent/hookscope-cli cannot run") != std::string::npos);
  CHECK(u->error.find("hookscope-cli record autograd-demo") != std::string::npos);
  CHECK(run.finished());
}

TEST_CASE("live run: stop() ends a running scenario and removes its files") {
  scenarios::ScenarioArgs args;
  args.scenario = "recovery";
  args.steps = 400;
  app::LiveRun run;
  run.start(args, "live", HOOKSCOPE_CLI_PATH);
  const auto t0 = std::chrono::steady_clock::now();
  run.stop();
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  CHECK_FALSE(run.active());
}

#endif  // HOOKSCOPE_APP_UI
