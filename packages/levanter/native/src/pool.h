// A fixed pool of worker threads that run numbered work items; the calling thread takes part.
// Items are claimed from an atomic counter, so which thread runs an item varies, but every item's
// result depends only on the item, never on the thread count: that keeps results bitwise stable.
#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

class Pool {
 public:
  explicit Pool(int threads) { resize(threads); }
  ~Pool() { stop(); }

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  void resize(int threads) {
    if (threads < 1) threads = 1;
    if (threads == this->threads()) return;
    stop();
    quit_ = false;
    const unsigned long start = gen_;
    for (int i = 0; i < threads - 1; i++) workers_.emplace_back([this, start] { loop(start); });
  }

  // Runs fn(i) for every i in [0, n); returns when all are done.
  void run(long n, const std::function<void(long)>& fn) {
    if (n <= 0) return;
    if (workers_.empty() || n == 1) {
      for (long i = 0; i < n; i++) fn(i);
      return;
    }
    {
      std::lock_guard<std::mutex> lk(mu_);
      fn_ = &fn;
      total_ = n;
      next_.store(0);
      pending_ = static_cast<int>(workers_.size());
      gen_++;
    }
    cv_.notify_all();
    work();
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [this] { return pending_ == 0; });
    fn_ = nullptr;
  }

 private:
  void work() {
    for (;;) {
      long i = next_.fetch_add(1);
      if (i >= total_) break;
      (*fn_)(i);
    }
  }
  void loop(unsigned long seen) {
    for (;;) {
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return quit_ || gen_ != seen; });
        if (quit_) return;
        seen = gen_;
      }
      work();
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (--pending_ == 0) done_cv_.notify_one();
      }
    }
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
  }

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(long)>* fn_ = nullptr;
  std::atomic<long> next_{0};
  long total_ = 0;
  int pending_ = 0;
  unsigned long gen_ = 0;
  bool quit_ = false;
};

// The one pool every kernel of the addon runs on (sized by the addon's setThreads).
inline Pool& sharedPool() {
  static Pool p(1);
  return p;
}
