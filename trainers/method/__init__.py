"""The training method of the paper, in pieces the trainers string together: rewards,
advantages and TopVar (``rewards``), the Mistake Book (``mistake_book`` and its command),
Step 3's validation (``validation``, ``consensus``), rollouts and their execution
(``rollouts``), one program's tests and results (``layout``), and what code-a1 and
self-play share (``adversarial``). No hooks here but the command's: trainers import these
modules, the core imports none of them."""
