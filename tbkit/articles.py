"""tbkit.articles — every statement of the five source articles that a
running timer can test, and where the suite answers it.

The five articles (in Chinese) that timerbench was started from live beside
the checkout, in ``../shared/sources`` (their README says which covers
what).  This module is the data behind the report's section "What the
source articles say" (issue 29, section 2): one entry per distinct testable
statement, with a short verbatim quote in the article's language, an English
rendering, the statement in one line, and the suite's answer.  A statement
that several articles make is one entry, quoted from the article that says
it most plainly; the others are listed in ``also_in``.

An answer is one string:

``claim:<id>``
    a claim of the report, keyed by the name of its function in
    ``tbkit/claims.py`` (the verdict is that run's);
``test:<path>:<name>``
    a test that asserts the statement: a cmocka test function of a C file
    or a test method of a Python file, path from the repository root;
``difference:<backend>``
    a deliberate difference that ``<backend>/README.md`` declares; the
    entry's ``key`` is a phrase of that README (whitespace aside) and
    ``why`` gives the reason;
``planned:<id>``
    a claim issue 29 adds (section 1); ``why`` says what it will check;
``uncovered``
    nothing in the suite answers it; ``why`` says why.

``see`` holds further answers in the same grammar (other tests, the claim a
test backs, today's declared difference of a planned claim); at most one
``difference`` per entry, in ``answer`` or in ``see``, and it uses ``key``.

Pure data, standard library only: ``tests/articles_test.py`` holds every
reference here to what the tree really contains, and each quote to its
article when the sources are beside the checkout.
"""

from dataclasses import dataclass

STATUSES = ("claim", "test", "difference", "planned", "uncovered")

# The report's claims are tbkit.claims.CLAIMS (ids in its order): a
# statement answered by "claim:<id>" names one of them
# (tests/articles_test.py holds every answer to that table).

# Claims planned but not yet in the registry.  Issue 29's are all answered
# now: five are claims of their own (Timer's wall clock among them, on the
# probe's wallstep, D15), the worst case and Netty's sleep are judged by the
# growth and Netty claims (heap_vs_wheel_growth, netty_ticks), the pool's
# fixed rate by the test that asserts it (test_fixed_rate_pool_never_overlaps).
PLANNED_IDS = ()


@dataclass(frozen=True)
class Article:
    """One source article: its file in the sources directory, its own title
    (None when the file carries none) and what it covers, in English."""
    file: str
    title: object
    covers: str


@dataclass(frozen=True)
class Statement:
    """One testable statement and the suite's answer (module docstring)."""
    id: str
    article: str
    quote: str
    english: str
    statement: str
    answer: str
    why: str
    see: tuple = ()
    key: str = ""
    also_in: tuple = ()


ARTICLES = (
    Article("000_bb78a1992807a610.txt", None,
            "ScheduledThreadPoolExecutor and its DelayedWorkQueue: the heap, growth by "
            "half, leader-follower take(), fixed rate and fixed delay"),
    Article("001_30b36e0707f5776f.txt", "ScheduledThreadPoolExecutor",
            "ScheduledThreadPoolExecutor notes: fixed-size pool, unbounded queue, "
            "ScheduledFutureTask, fixed rate against fixed delay"),
    Article("002_c1f6885faa2c0720.txt", "深入剖析Java计划任务ScheduledThreadPoolExecutor",
            "ScheduledThreadPoolExecutor in depth, and the four defects of "
            "java.util.Timer it replaced"),
    Article("003_fde2585c5daaecda.txt", None,
            "Timer, ScheduledThreadPoolExecutor, DelayQueue, Netty's HashedWheelTimer "
            "and Kafka's hierarchical timing wheel with its DelayQueue of buckets"),
    Article("004_6ed0bb4395573d97.txt", "线程池 ThreadPool 的实现",
            "A thread pool implementation: core and maximum size, work queue, "
            "states, workers"),
)

A0, A1, A2, A3, A4 = (a.file for a in ARTICLES)

HQ = "tests/test_heapqueue.c"
TT = "tests/test_timerthread.c"
TW = "tests/test_timerwheel.c"
HW = "tests/test_hierwheel.c"
CF = "tests/conformance.c"


def _t(path, name):
    return "test:%s:%s" % (path, name)


STATEMENTS = (
    # ---- ScheduledThreadPoolExecutor and DelayedWorkQueue ------------------
    Statement(
        "stpe_earliest_first", A0,
        "延时时间越短地就排在队列的前面,先被获取执行",
        "the shorter the delay, the nearer the front of the queue, and the sooner it "
        "is taken and run",
        "Tasks run in deadline order: the earliest deadline is taken first.",
        _t(CF, "test_order_across_ticks"),
        "every backend runs deadlines of different ticks in deadline order",
        see=(_t(CF, "test_never_early_exactly_once"),),
        also_in=(A1, A4)),
    Statement(
        "heap_array_layout", A4,
        "堆在逻辑上是二叉树，存储为数组；节点从上到下，从左到右按顺序摊平在数组上",
        "the heap is logically a binary tree stored as an array, its nodes laid out "
        "top to bottom, left to right",
        "DelayedWorkQueue is a 0-based array binary min-heap: children of i at 2i+1 "
        "and 2i+2, parent at (i-1)/2.",
        _t(HQ, "test_sift_levels_counted"),
        "the sift levels of inserts, a poll and removals are counted by hand on the "
        "0-based layout and must match exactly",
        see=(_t(HQ, "test_heap_checker_random"),),
        also_in=(A0, A1)),
    Statement(
        "heap_worst_case_log_n", A0,
        "堆结构在执行插入和删除操作时的最坏时间复杂度是 O(logN)",
        "in the worst case a heap's insert and removal take O(log N)",
        "Heap insert and removal cost O(log N) in the worst case.",
        "claim:heap_vs_wheel_growth",
        "the growth claim's worst case: workload worst, deadlines in decreasing order, "
        "so every insert climbs to the root and a removal goes down from it; judged "
        "on the counted work (the micro's counters, else Valgrind's counts), the "
        "average (uniform deadlines) said beside it (D13)"),
    Statement(
        "stpe_unbounded_grows_by_half", A0,
        "DelayedWorkQueue添加元素满了之后会自动扩容原来容量的1/2,即永远不会阻塞",
        "when DelayedWorkQueue is full it grows by half of its capacity, so adding "
        "never blocks",
        "The queue is unbounded: a full array (16 slots at first) grows by half instead "
        "of blocking or refusing.",
        _t(HQ, "test_heap_starts_at_16_grows_by_half"),
        "the array grows exactly at the 17th, 25th, 37th and 55th task, by 8, 12, 18 "
        "and 27 slots",
        see=(_t(HQ, "test_reserve_heap"),),
        also_in=(A1, A2, A4)),
    Statement(
        "stpe_at_most_core_threads", A0,
        "所以线程池中永远会保持至多有corePoolSize个工作线程正在运行",
        "so the pool always keeps at most corePoolSize worker threads running",
        "A ScheduledThreadPoolExecutor is a fixed pool: at most corePoolSize tasks run "
        "at once.",
        "uncovered",
        "heapqueue's pool is fixed at `threads` workers, but no test or experiment "
        "counts the runs in progress against that size (the new fixed-rate test of "
        "issue 29 counts the overlapping runs of one task only)",
        also_in=(A1,)),
    Statement(
        "stpe_new_head_wakes", A0,
        "如果堆顶元素刚好是此时被添加的元素,则唤醒take线程消费",
        "if the element just added is now the head of the heap, a take thread is woken "
        "to consume it",
        "A new earliest task clears the leader and wakes a waiting worker, so it does "
        "not wait for the old head's deadline.",
        _t(HQ, "test_leader_wakes_for_earlier_head"),
        "a pool of three waiting for a task an hour away runs a new 20 ms task without "
        "waiting for the old head (and not early), with and without the leader",
        also_in=(A2, A4)),
    Statement(
        "stpe_take_only_when_due", A0,
        "在take方法中,要保证只有在到指定的执行时间的时候任务才可以被取走",
        "take() must ensure that a task can be taken only once its execution time has "
        "come",
        "A task is never run before its deadline.",
        _t(CF, "test_monotonic_all_run"),
        "with real threads on every backend, each of 1000 tasks starts at or after "
        "its deadline; the virtual-clock case is test_never_early_exactly_once",
        see=(_t(CF, "test_never_early_exactly_once"),),
        also_in=(A1, A2, A4)),
    Statement(
        "stpe_leader_saves_timed_waits", A0,
        "这里的leader是为了减少不必要的定时等待",
        "the leader is there to cut unnecessary timed waits",
        "With the leader only one worker waits timed for the head, the others wait "
        "untimed: fewer timed waits than a leaderless pool.",
        "claim:leader_follower",
        "the workers experiment compares timed waits per task with the leader on and "
        "off",
        see=(_t(HQ, "test_leader_saves_wakeups"),),
        also_in=(A2, A4)),
    Statement(
        "stpe_signal_one", A0,
        "在finally中调用了signal()来唤醒一个线程,而不是signalAll()",
        "the finally block calls signal() to wake one thread, not signalAll()",
        "A thread leaving take() wakes one waiting thread to lead the next wait, not "
        "all of them.",
        "claim:leader_wakes_one",
        "the workers experiment: wake-ups per task with the leader at most 2.5 (the "
        "leader's timeout and one successor), not one per idle worker, and fewer than "
        "without the leader; a unit test bounds them too",
        see=(_t(HQ, "test_leader_saves_wakeups"),),
        also_in=(A2, A3)),
    Statement(
        "stpe_cancel_removes_by_index", A0,
        "删除指定元素一般用于取消任务时,任务还在阻塞队列中,则需要将其删除",
        "removing a given element is used when a task is cancelled while still in the "
        "queue: it has to be removed",
        "A cancelled task is removed from the heap through its stored heap index "
        "(sift down, then up).",
        _t(HQ, "test_remove_on_cancel"),
        "the JDK removes only under setRemoveOnCancelPolicy(true); by default the "
        "cancelled task stays queued until its time. The test asserts both: with the "
        "flag the pending count drops at once, without it five zombies stay",
        see=(_t(HQ, "test_sift_levels_counted"), "claim:heap_vs_wheel_growth"),
        also_in=(A1,)),
    Statement(
        "leader_follower_cache_affinity", A0,
        "这种方法可以增强CPU高速缓存相似性,及消除动态内存分配和线程间的数据交换",
        "this improves CPU cache affinity and removes dynamic memory allocation and "
        "data exchange between threads",
        "Leader-follower improves cache affinity and avoids allocation and hand-offs "
        "between threads.",
        "uncovered",
        "the suite counts the pool's timed waits and wake-ups, not its cache misses per "
        "thread or its allocations; the sentence is about leader-follower network "
        "servers in general"),
    Statement(
        "stpe_fixed_rate_grid", A1,
        "也就是将在 initialDelay 后开始执行，然后在 initialDelay+period 后执行，"
        "接着在 initialDelay + 2 * period 后执行",
        "it first runs after initialDelay, then after initialDelay+period, then after "
        "initialDelay + 2 * period",
        "A fixed-rate task runs at initialDelay + k * period, without drift.",
        _t(CF, "test_fixed_rate_no_drift"),
        "1000 runs of a 10 ms fixed-rate task, each exactly at (k + 1) * period",
        also_in=(A2,)),
    Statement(
        "stpe_fixed_rate_no_overlap", A1,
        "如果上一个任务没有执行完毕，则需要等上一个任务执行完毕后立即执行",
        "if the previous run has not finished, the next one starts as soon as it "
        "finishes",
        "A fixed-rate run never overlaps the previous one; late runs follow back to "
        "back.",
        _t(HQ, "test_fixed_rate_pool_never_overlaps"),
        "a real-clock test with a pool of four: a 1 ms fixed-rate task that sleeps "
        "5 ms, its concurrent runs counted (never more than one); on the virtual "
        "clock the late runs follow back to back",
        see=(_t(HQ, "test_periodic_with_slow_runs"), _t(CF, "test_fixed_rate_catch_up")),
        also_in=(A2,)),
    Statement(
        "stpe_fixed_delay_from_end", A1,
        "在每一次执行终止和下一次执行开始之间都存在给定的延迟",
        "between the end of one run and the start of the next there is the given "
        "delay",
        "A fixed-delay task waits its delay from the end of one run to the start of "
        "the next.",
        _t(HQ, "test_periodic_with_slow_runs"),
        "a 10 ms fixed-delay task whose runs take 6 ms starts at 10, 26, 42, 58 ms",
        see=(_t(TT, "test_fixed_delay_start_to_start"),),
        also_in=(A2,)),
    Statement(
        "stpe_cancel_via_future", A1,
        "通过该结果可以后续取消锁调度任务的执行",
        "through this result the scheduled task's execution can later be cancelled",
        "A scheduled task can be cancelled through its handle before it runs.",
        _t(CF, "test_cancel_answers"),
        "a cancel before the run prevents it and answers 1; twice, after the run or "
        "with a stale handle it answers 0"),
    Statement(
        "stpe_ties_by_sequence", A2,
        "如果两个任务的执行时间点一样，比较两个任务的编号，编号小的排在队列前面",
        "if two tasks are due at the same time, their sequence numbers decide: the "
        "smaller one goes first",
        "Equal deadlines run in submission order (sequence number).",
        _t(CF, "test_equal_deadlines"),
        "300 tasks at one deadline run in submission order on every backend with "
        "FIFO ties, heapqueue among them; a re-queued periodic task keeps its number",
        see=(_t(HQ, "test_requeue_keeps_sequence"),)),
    Statement(
        "stpe_periodic_requeued_after_run", A3,
        "setNextRunTime();//先设置下次任务执行时间 reExecutePeriodic(outerTask); //任务重新入队列",
        "first set the next execution time, then put the task back in the queue",
        "A periodic task is off the queue while it runs and is re-queued after the "
        "run.",
        _t(HQ, "test_max_pending_refuses_rearm"),
        "with max_pending 1, a schedule from inside the periodic task's run is "
        "accepted (the task holds no place while it runs) and its re-queue is then "
        "refused",
        see=(_t(HQ, "test_requeue_keeps_sequence"),),
        also_in=(A2,)),
    Statement(
        "stpe_periodic_cancelled_at_shutdown", A2,
        "如果当前线程池运行状态不可以执行任务，取消该任务",
        "if the pool's run state no longer allows the task to run, the task is "
        "cancelled",
        "After shutdown, periodic tasks are cancelled by default.",
        _t(HQ, "test_shutdown_policies"),
        "under the default policy the periodic task runs 0 times after shutdown, 6 "
        "times with TB_F_KEEP_PERIODIC_ON_SHUTDOWN"),
    Statement(
        "stpe_rejects_after_shutdown", A2,
        "线程池已经关闭，调用拒绝执行处理器处理",
        "the pool is shut down: the rejected-execution handler deals with the task",
        "A task submitted after shutdown is rejected.",
        _t(HQ, "test_shutdown_policies"),
        "a schedule after tb_shutdown gets TB_ESHUTDOWN under every policy; "
        "conformance asserts it for every backend",
        see=(_t(CF, "test_bad_input"),),
        also_in=(A4,)),
    Statement(
        "stpe_queue_runs_after_shutdown", A4,
        "但可以继续把 workQueue 里的任务执行完",
        "but it can go on running the tasks in workQueue to the end",
        "After shutdown, the delayed one-shot tasks already queued still run.",
        _t(HQ, "test_shutdown_policies"),
        "under the default policy the queued one-shot runs after shutdown; with "
        "TB_F_DROP_DELAYED_ON_SHUTDOWN it is dropped"),
    Statement(
        "stpe_prestart_worker", A2,
        "增加一个worker，就算corePoolSize=0也要增加一个worker",
        "add a worker, even when corePoolSize is 0",
        "The first submission starts a worker (ensurePrestart).",
        "difference:heapqueue",
        "the interface starts every backend's threads in tb_start() (DESIGN.md, \"The "
        "one interface\"); the README declares it among its deliberate differences "
        "without a further reason",
        key="workers start at `tb_start`, not at the first submission"),
    Statement(
        "stpe_imprecise_heap", A2,
        "由于使用队列来实现定时器，有出入队调整堆等操作，所以定时并不是非常非常精确",
        "since the timer is built on a queue, with heap adjustments on every enqueue "
        "and dequeue, its timing is not very precise",
        "Heap maintenance makes the pool's timing less precise under load.",
        "claim:heap_maintenance_precision",
        "the lateness experiment: heapqueue's p99 at light load against 10^5 pending, "
        "set against the floor's own spread over the repetitions"),
    Statement(
        "stpe_one_thread_like_timer", A3,
        "Configuring {@code * ScheduledThreadPoolExecutor} with one thread makes it "
        "equivalent to * {@code Timer}.",
        "(Timer's Javadoc, quoted) a ScheduledThreadPoolExecutor with one thread is "
        "equivalent to Timer",
        "An STPE with one thread behaves like Timer on a slow task (and differs on a "
        "failing one).",
        "claim:stpe_one_thread_like_timer",
        "the interference experiment with heapqueue at one thread against timerthread: "
        "the same delay of the other tasks; the failing experiment (real threads, one "
        "runner each) shows the difference"),
    Statement(
        "stpe_pool_not_blocked", A3,
        "主要差别在于能多线程运行任务,不会单线程阻塞",
        "the main difference is that tasks run on several threads, so one thread "
        "does not block them",
        "A pool is not held up by one slow task as Timer's single thread is.",
        "claim:slow_task",
        "the claim's pool side: heapqueue's fast tasks stay far less late than "
        "timerthread's next to a 50 ms task"),
    Statement(
        "stpe_exception_caught", A3,
        "Java线程池的底层runworker实现了异常的捕获,不会因为一个任务的出错而影响之后的任",
        "the pool's runWorker catches exceptions, so one failing task does not affect "
        "the tasks after it",
        "In a pool a failing task does not stop the others.",
        "claim:failing_task",
        "the claim's pool side: after one failing task heapqueue runs every later task "
        "and accepts new ones",
        see=(_t(CF, "test_failure_reaction"), _t(HQ, "test_failing_periodic_stops"))),

    # ---- java.util.Timer ----------------------------------------------------
    Statement(
        "timer_single_thread", A2,
        "Timer是**单线程**模式",
        "Timer is single-threaded",
        "One Timer runs every task on its one thread.",
        _t(TT, "test_one_timer_thread"),
        "every run, one-shot and periodic, is on the same thread, not the caller's",
        also_in=(A3,)),
    Statement(
        "timer_slow_task_delays_others", A2,
        "如果在执行任务期间某个TimerTask耗时较久，那么就会影响其它任务的调度",
        "if a TimerTask takes long to run, the scheduling of the other tasks suffers",
        "A slow task in Timer delays every other task.",
        "claim:slow_task",
        "the interference experiment: the fast tasks' maximum lateness next to a 50 ms "
        "task, timerthread against heapqueue",
        see=(_t(TT, "test_fixed_rate_catch_up"),),
        also_in=(A3,)),
    Statement(
        "timer_wall_clock", A2,
        "Timer的任务调度是基于绝对时间的，对**系统时间**敏感",
        "Timer schedules on absolute time and is sensitive to the system time",
        "Setting the system clock moves Timer's pending deadlines.",
        "claim:timer_wall_clock",
        "the wallstep probe: after the wall clock is stepped back by 50 ms, timerthread "
        "(deadlines on a wall clock read as System.currentTimeMillis) runs every "
        "pending task 50 ms late, heapqueue (the monotonic clock, as STPE reads "
        "nanoTime) on time (D15)",
        see=(_t(TT, "test_wall_step_back_delays_timer_not_pool"),
             _t(TT, "test_wall_step_forward_runs_early"),
             _t(TT, "test_wall_step_periodic"))),
    Statement(
        "timer_exception_kills", A2,
        "由于Timer是单线程，所以一旦出现异常，则线程就会终止，其他任务也得不到执行",
        "since Timer has one thread, an exception ends that thread and no other task "
        "runs",
        "A task that throws kills Timer: no later task runs and new ones are refused.",
        "claim:failing_task",
        "the failure probe: after one failing task timerthread runs none of the tasks "
        "due after it and refuses new ones",
        see=(_t(TT, "test_failure_kills_timer"), _t(TT, "test_failure_ends_thread")),
        also_in=(A3,)),
    Statement(
        "timer_queue_128_doubles", A3,
        "if (size + 1 == queue.length) queue = Arrays.copyOf(queue, 2*queue.length); //扩容",
        "when the next add would fill the array, double it (grow)",
        "Timer's queue is a 1-based heap array of 128 slots that doubles when an add "
        "would fill it.",
        _t(TT, "test_heap_starts_at_128_and_doubles"),
        "127 tasks fit in 128 slots; the 128th doubles the array, the 256th doubles it "
        "again",
        see=(_t(TT, "test_sift_levels_counted"),)),
    Statement(
        "timer_heap_log_n", A3,
        "根据堆的特性我们知道插入和删除的时间复杂度都是 O(logn)",
        "by the heap's nature, insert and removal take O(log n)",
        "Heap insert and removal grow as log n (and a wheel's stay constant).",
        "claim:heap_vs_wheel_growth",
        "insert and cancel with removal, N 10^2 to 10^6: the worst case (decreasing "
        "deadlines) judged on the counted work, the average (uniform deadlines) on "
        "work and on time, each named in the verdict"),
    Statement(
        "timer_reschedule_before_run", A3,
        "如果是则修改当前任务时间为下次执行的时间,如果不是周期性任务则将任务从优先队列中移除,最后执行任务",
        "if periodic, set its next execution time; if not, remove it from the queue; "
        "then run the task",
        "Timer reschedules a periodic task (or removes a one-shot) before running it.",
        _t(TT, "test_reschedule_before_run"),
        "a running one-shot is no longer queued (a cancel from inside prevents "
        "nothing); a running periodic task is already rescheduled and still queued"),
    Statement(
        "timer_fixed_delay_from_dequeue", A3,
        "task.period<0 ? currentTime - task.period : executionTime + task.period",
        "fixed delay: next = current time + delay; fixed rate: next = scheduled time "
        "+ period",
        "Timer's fixed delay counts from the moment the task is taken (start to "
        "start), its fixed rate from the scheduled time.",
        _t(TT, "test_fixed_delay_start_to_start"),
        "a 10 ms fixed-delay task running 6 ms starts at 10, 20 .. 60 ms on "
        "timerthread and at 10, 26, 42, 58 on heapqueue",
        see=(_t(TT, "test_late_rate_vs_delay"),)),
    Statement(
        "timer_cancelled_head_dropped", A3,
        "if (task.state == TimerTask.CANCELLED) { //取消泽移除并继续循环 queue.removeMin(); continue;",
        "if the head task is cancelled, remove it and loop again",
        "A cancelled Timer task stays in the queue until it reaches the head, where "
        "the loop drops it without running it.",
        _t(TT, "test_cancelled_head_dropped"),
        "two cancelled tasks stay pending as zombies; each leaves when it is on top, "
        "even before its time, and never runs",
        see=(_t(TT, "test_lazy_cancel_then_purge"), "claim:lazy_deletion")),
    Statement(
        "timer_constructor_starts_thread", A3,
        "thread.start(); //构造时默认启动线程",
        "the thread is started by the constructor",
        "Creating a Timer starts its thread.",
        "difference:timerthread",
        "the interface starts every backend's threads in tb_start() (DESIGN.md, \"The "
        "one interface\"); the README adds that no reaper ends the thread of an "
        "unreachable Timer",
        key="in `tb_start()`, not in the constructor"),

    # ---- priority queues against wheels ------------------------------------
    Statement(
        "heap_timers_for_few_tasks", A3,
        "O(logn) 的时间复杂度在任务数多的情况下频繁的插入、删除操作有性能问题,因此适合于任务数不多的情况",
        "with many tasks the O(log n) inserts and removals become a performance "
        "problem, so these suit a small number of tasks",
        "Heap timers suit few tasks; with many, a wheel is faster (a crossover N).",
        "claim:crossover",
        "the timeouts micro-benchmark: the fastest heap against the fastest wheel at "
        "the smallest and the largest N; under load, the purgatory experiment: the "
        "delay queue (heapqueue, the JDK's DelayQueue) against the wheels in requests "
        "per second before saturation",
        see=("claim:purgatory_saturation",)),
    Statement(
        "wheel_o1_add_remove", A3,
        "槽的内部用双向链表存着待执行的任务,添加和删除的链表操作时间复杂度都是 O(1)",
        "each slot keeps its tasks in a doubly linked list; adding and removing are "
        "O(1)",
        "A timing wheel's insert and removal cost stays constant as N grows.",
        "claim:heap_vs_wheel_growth",
        "the claim's wheel side: every wheel's insert and cancel stay flat from 10^2 "
        "to 10^6, on work and on time",
        see=(_t(HW, "test_cancel_unlinks_at_once"),)),
    Statement(
        "wheel_slot_runs_early", A3,
        "延迟 1.2 秒的任务和 1.5 秒的任务会被加入到同一个槽中,然后在 1 秒的时候遍历这个槽中的链表执行任务",
        "a task delayed 1.2 s and one delayed 1.5 s go into the same slot, whose list "
        "is walked and run at 1 s",
        "A wheel runs a slot's tasks at the slot's start: up to a tick early (Kafka "
        "files a task under its bucket's start time).",
        "difference:hierwheel",
        "the contract of every backend is never early: a deadline is rounded up to "
        "the tick, so these tasks run at 2 s (Kafka with a tick above 1 ms can fire a "
        "task up to a tick early)",
        see=(_t(HW, "test_rounds_up_not_down"), _t(TW, "test_delay_shorter_than_tick")),
        key="A deadline is rounded *up* to the tick."),

    # ---- Netty HashedWheelTimer --------------------------------------------
    Statement(
        "netty_rounds", A3,
        "然后计算轮次:(50 - 1) / 8 = 6,即轮数记为 6",
        "then compute the rounds: (50 - 1) / 8 = 6, so the task waits 6 rounds",
        "Netty keeps a timeout beyond one revolution in its slot with a count of "
        "rounds and fires it after that many revolutions.",
        _t(TW, "test_revolutions"),
        "deadlines of 1, 2 and 3 revolutions and one tick either side all fire at "
        "their exact time on an 8-slot wheel",
        see=(_t(TW, "test_work_counters"),)),
    Statement(
        "netty_expire_walk", A3,
        "if (timeout.remainingRounds <= 0L) {//处理轮数为0的任务",
        "expire the timeouts whose rounds are down to 0 (others lose one round)",
        "Each tick walks its bucket: rounds <= 0 expire, cancelled ones are unlinked, "
        "the others lose one round.",
        _t(TW, "test_work_counters"),
        "visits and round decrements of a 4-slot case are counted by hand and must "
        "match (D2)",
        see=(_t(TW, "test_ticks_and_visits"),)),
    Statement(
        "netty_power_of_two_wheel", A3,
        "this.wheel = createWheel(ticksPerWheel);//默认512的槽数量",
        "the wheel is created with 512 slots by default",
        "Netty's wheel has 512 slots by default, rounded up to a power of two and "
        "indexed by tick & mask.",
        _t(TW, "test_config"),
        "defaults 100 ms and 512 slots; 3 slots become 4, 513 become 1024; a tick "
        "whose span would overflow is refused"),
    Statement(
        "netty_mask_faster", A3,
        "mask设计提高了“确定槽位下标”的性能,通过限制wheel.length为2的N次方",
        "the mask makes finding the slot index faster, by limiting wheel.length to a "
        "power of two",
        "Indexing by a mask is faster than by a modulo.",
        "uncovered",
        "timerwheel indexes by mask as Netty does; no variant indexes by modulo, so "
        "the speed-up is not measured"),
    Statement(
        "netty_lazy_start", A3,
        "this.start();//启动工作线程,内部有判断状态",
        "start the worker thread (it checks its state inside)",
        "newTimeout starts Netty's worker on first use.",
        "difference:timerwheel",
        "the interface starts every backend's threads in tb_start() (DESIGN.md, \"The "
        "one interface\"), which here also records the start time; Netty waits for "
        "its lazily started worker to record it",
        key="Netty also starts its worker lazily on the first `newTimeout`"),
    Statement(
        "netty_transfer_limit", A3,
        "//设置了一次性处理10w个任务入槽",
        "at most 100 000 tasks are moved into slots at a time",
        "newTimeout only queues the timeout; each tick moves at most 100 000 queued "
        "timeouts into buckets.",
        _t(TW, "test_transfer_limit"),
        "100 001 timeouts take two ticks to place and still fire together on time",
        see=(_t(TW, "test_pending_drops_next_tick_once"),)),
    Statement(
        "netty_tick_from_start", A3,
        "long deadline = HashedWheelTimer.this.tickDuration * (this.tick + 1L);"
        "//根据时间精度,算出需要下一次的检查时间",
        "the next check time is computed from the tick duration: duration * (tick + 1)",
        "The worker sleeps to absolute tick times counted from its start, so a "
        "stalled worker catches up without drift.",
        _t(TW, "test_threaded_catch_up_after_stall"),
        "after a stall the missed ticks run back to back without a wait and later "
        "ticks keep their times (counted by the worker's timed waits)",
        see=(_t(TW, "test_no_drift"),)),
    Statement(
        "netty_whole_ms_sleep", A3,
        "long sleepTimeMs = (deadline - currentTime + 999999L) / 1000000L;",
        "the sleep time is the time to the next tick rounded up to whole milliseconds "
        "(multiples of 10 ms on Windows)",
        "Netty sleeps in whole milliseconds rounded up, so it fires up to a tick late "
        "as it really sleeps.",
        "claim:netty_ticks",
        "timerwheel sleeps as waitForNextTick does, in whole milliseconds rounded "
        "up (the default), and the claim's lateness part judges that sleep; "
        "TB_F_EXACT_SLEEP's nanosecond wait is measured beside it as sleep=exact (D14)",
        see=(_t(TW, "test_threaded_sleep_whole_ms"),
             _t(TW, "test_threaded_sleep_exact"))),
    Statement(
        "netty_cancels_before_walk", A3,
        "this.processCancelledTasks();//先处理取消了的任务",
        "first process the cancelled tasks",
        "Each tick processes cancels, then transfers, then walks the bucket (Netty "
        "4.1's order).",
        _t(TW, "test_cancel_processed_before_walk"),
        "a timeout cancelled before its bucket's turn is unlinked by the cancel step "
        "and never visited by the walk"),
    Statement(
        "netty_overdue_to_current_slot", A3,
        "long ticks = Math.max(calculated, this.tick);//如果时间已经过了,放到当前即将执行的槽位中",
        "if its time has already passed, put it in the slot about to be processed",
        "A timeout already overdue when it is transferred runs at the tick being "
        "processed.",
        _t(TW, "test_overdue_runs_before_bucket"),
        "the overdue timeout runs in that tick; timerwheel runs it before the "
        "bucket's own entries where Netty appends it after them, so wheels keep tick "
        "order",
        see=("difference:timerwheel",),
        key="Netty files an entry whose tick has already passed"),
    Statement(
        "netty_empty_advances", A3,
        "如果槽位中无任务,也需要移动指针,会造成无效的时间轮推进",
        "even when a slot holds no task the pointer must move: useless advances of "
        "the wheel",
        "Netty's worker wakes every tick even when nothing is due (499 empty ticks for "
        "one task 500 ticks away).",
        "claim:netty_ticks",
        "the idle experiment: ticks per second near one per tick, most of them empty",
        see=(_t(TW, "test_ticks_and_visits"),)),
    Statement(
        "netty_not_precise", A3,
        "因此任务不一定会被精准的执行",
        "so tasks are not necessarily run precisely on time",
        "Netty fires up to a tick late.",
        "claim:netty_ticks",
        "the lateness part, on Netty's whole-millisecond sleep: p50 more than a "
        "quarter tick over the floor, p99 not significantly over a tick past it",
        see=(_t(TW, "test_threaded_sleep_whole_ms"),)),
    Statement(
        "netty_slow_task_blocks", A3,
        "那么耗时的任务会阻塞下个任务的执行",
        "then a slow task blocks the execution of the next one",
        "A slow task on the wheel's single worker delays every other timeout.",
        "claim:single_runner_delay",
        "the interference experiment with one runner, every backend (timerwheel, "
        "quadheap, kernelwheel, hrtree and the others, as Timer), judged on the "
        "maximum lateness against heapqueue's pool",
        see=(_t(TW, "test_threaded_catch_up_after_stall"),)),
    Statement(
        "netty_max_pending", A3,
        "pendingTimeoutsCount > this.maxPendingTimeouts",
        "more pending timeouts than maxPendingTimeouts: the new one is rejected",
        "Past maxPendingTimeouts, newTimeout is refused.",
        _t(TW, "test_max_pending"),
        "a schedule over the cap gets TB_EFULL; a cancelled timeout keeps its place "
        "until the next tick, as in Netty",
        see=(_t(CF, "test_max_pending"),)),

    # ---- Kafka's hierarchical timing wheel ---------------------------------
    Statement(
        "hierarchy_covers_range", A3,
        "一个三层,每层8个槽,一共24个槽时间轮就可以处理最多延迟 512 秒的任务",
        "three levels of 8 slots, 24 slots in all, handle delays of up to 512 s",
        "Hierarchical levels cover long ranges with few buckets.",
        "claim:hierarchy",
        "the range part: hierwheel's insert costs no more on delays of 1 ms to a day "
        "than on short ones",
        see=(_t(HW, "test_full_range"), _t(HW, "test_levels_created_lazily"))),
    Statement(
        "hierarchy_demotion", A3,
        "因此它会被降低放在第二层中,第一层还放不下它",
        "so it is moved down to the second level; the first cannot hold it yet",
        "As its time nears, a task moves down level by level and runs from the lowest "
        "level at its time.",
        _t(HW, "test_clock_jumps_to_due_buckets"),
        "at 3 buckets of 1 ms a task 10 s out enters level 8, cascades six times "
        "(at 6561, 8748 .. 9999 ms) and runs at exactly 10 s",
        see=(_t(HW, "test_cascades_per_task"), "claim:hierarchy")),
    Statement(
        "kafka_overflow_wheel_lazily", A3,
        "//当时间溢出时,需要新增上一级时间轮,通过overflowWheel引用上一级侧时间轮",
        "when a time overflows, an upper wheel is added, referenced by overflowWheel",
        "A higher level is created only when a task reaches past the levels there "
        "are, and then kept.",
        _t(HW, "test_levels_created_lazily"),
        "levels appear one by one exactly at each span's end and stay after the tasks "
        "are gone"),
    Statement(
        "kafka_bucket_offered_on_new_expiration", A3,
        "//将槽位的TimerTaskList添加到延迟队列中",
        "add the slot's TimerTaskList to the delay queue (when its expiration is set)",
        "A bucket enters the delay queue when its expiration changes: once per "
        "revolution, however many tasks it takes.",
        _t(HW, "test_bucket_offered_once_per_revolution"),
        "three tasks in one bucket make one offer; the bucket is offered again only on "
        "its next revolution"),
    Statement(
        "kafka_due_task_to_executor", A3,
        "//到执行时间,执行任务 taskExecutor.submit(timerTaskEntry.timerTask)",
        "the task is due: hand it to the executor",
        "A task already due when it is added bypasses the wheel and goes to the "
        "executor; a cancelled one is not run.",
        _t(HW, "test_past_deadlines_skip_wheel"),
        "past and zero delays make no bucket offer and run on the executor in FIFO "
        "order (Kafka's TimerTest.testAlreadyExpiredTask); a task less than a tick "
        "away waits for its tick (see wheel_slot_runs_early)",
        see=(_t(HW, "test_cancel_unlinks_at_once"),)),
    Statement(
        "kafka_reaper_polls_delay_queue", A3,
        "var bucket = delayQueue.poll(timeoutMs, TimeUnit.MILLISECONDS)//从延迟队列获取槽",
        "take a slot from the delay queue, waiting at most timeoutMs",
        "The reaper waits on the delay queue for at most timeoutMs at a time; a "
        "bucket due earlier ends the wait.",
        _t(HW, "test_reaper_bounded_poll"),
        "with one far task the reaper wakes at every poll timeout and polls no bucket; "
        "an earlier bucket wakes it at once",
        see=(_t(HW, "test_reaper_wakes_for_earlier_bucket"),)),
    Statement(
        "kafka_no_empty_advances", A3,
        "而Kafka采用DelayQueue来保存有任务数据的槽,利用空间换时间的思想解决了空推进的问题",
        "Kafka keeps the slots that hold tasks in a DelayQueue, trading space for "
        "time, and so has no empty advances",
        "Kafka's delay queue of buckets removes the empty clock advances of a ticking "
        "wheel.",
        "claim:kafka_no_empty_advances",
        "the idle experiment: hierwheel has no empty ticks and wakes far less often "
        "than timerwheel at the same tick",
        see=(_t(HW, "test_clock_jumps_to_due_buckets"),)),
    Statement(
        "kafka_defaults", A3,
        "tickMs: Long = 1, wheelSize: Int = 20",
        "SystemTimer's defaults: a 1 ms tick, 20 slots",
        "Kafka's timer defaults to a 1 ms tick, 20 buckets per level and one "
        "executor thread.",
        _t(HW, "test_defaults"),
        "tick 1 ms, 20 buckets, one executor thread, a 200 ms reaper poll, one level "
        "at first"),

    # ---- thread pool states and rejection ----------------------------------
    Statement(
        "pool_stop_drops_queue", A4,
        "`STOP`，不能提交新任务，不执行 workQueue 里的任务",
        "STOP: no new task may be submitted, and the tasks in workQueue are not run",
        "shutdownNow runs none of the queued tasks and hands them back.",
        _t(CF, "test_shutdown_now_returns_unrun"),
        "every backend returns exactly the tasks that never ran, runs none of them "
        "afterwards and refuses new ones"),
    Statement(
        "pool_terminated", A4,
        "所有任务都已结束，此时线程数为零",
        "every task has ended and the thread count is zero",
        "Once the pool has terminated no task runs any more and no thread is left.",
        _t(CF, "test_monotonic_shutdown_now"),
        "on every backend, after tb_shutdown_now and tb_await_termination nothing "
        "more runs: the tasks that ran and those handed back partition all"),
    Statement(
        "pool_stop_interrupts", A4,
        "且中断正在执行的任务",
        "and the running tasks are interrupted",
        "shutdownNow interrupts the tasks that are running.",
        "uncovered",
        "a C callback cannot be interrupted; no backend models Thread.interrupt, and "
        "a running task finishes"),
    Statement(
        "pool_rejection_policies", A4,
        "`ThreadPoolExecutor` 提供了 `RejectedExecutionHandler` 来处理这种情况，平常通过 "
        "`Executors` 创建的线程池使用默认的 `AbortPolicy`，它会抛出异常",
        "ThreadPoolExecutor hands such tasks to a RejectedExecutionHandler; pools made "
        "by Executors use the default AbortPolicy, which throws",
        "A rejected task goes to the pool's handler: abort (default), discard, "
        "discard the oldest, or run in the caller.",
        "uncovered",
        "the interface has one reaction, an error code (AbortPolicy's); no discard or "
        "caller-runs policy is modelled"),
)


def status(answer):
    """The status of an answer string: the part before its first colon."""
    return answer.split(":", 1)[0]


def article(file):
    """The Article for a file name."""
    for a in ARTICLES:
        if a.file == file:
            return a
    raise KeyError(file)


def label(file):
    """How the report names an article: its file and title, or what it
    covers when it has no title."""
    a = article(file)
    return "%s (%s)" % (a.file, a.title if a.title else "untitled: " + a.covers.split(":")[0])


def by_id():
    """{id: Statement}."""
    return {s.id: s for s in STATEMENTS}


def count_by_status():
    """{status: number of statements}, every status present."""
    out = {k: 0 for k in STATUSES}
    for s in STATEMENTS:
        out[status(s.answer)] += 1
    return out
