"""`HParamsMetrics`: the run's losses as the metrics of its TensorBoard HPARAMS session."""
from txl_tf.training.actions.validation import Evaluate
from txl_tf.training.actions.log_progress import LogProgress
from txl_tf.training.controller import LoopOutput
from txl_tf.training.reporting.hparams_session import HParamsSession


class HParamsMetrics:
    """After the log and the evaluation: their losses as the hparams session's metrics (the
    dashboard shows the last ones: the run's final train and valid loss and bpc/ppl)."""
    every = 0

    def __init__(self, session: HParamsSession, log: LogProgress, evaluation: Evaluate):
        self.session = session
        self.log = log
        self.evaluation = evaluation

    def __call__(self, output: LoopOutput) -> None:
        if self.log.last_step == output.step:
            self.session.train(output.step, self.log.last_loss)
        if self.evaluation.last_step == output.step:
            self.session.valid(output.step, self.evaluation.last_loss)
