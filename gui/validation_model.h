#pragma once
// The ops table of the "Predicted vs measured" tab: a thin QAbstractTableModel
// over a ValidationReport's ops (one row per measured op, in the report's
// order), with a sort role holding the numbers behind the text.

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <memory>

#include "simulate/validation.h"

namespace dayzero::gui {

class ValidationTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Rank, Phase, Op, Kind, Shape, Calls, Bound, MeasuredUs, PredictedUs, ErrorPct, ColumnCount };
  static constexpr int SortRole = Qt::UserRole;

  explicit ValidationTableModel(QObject* parent = nullptr);
  void setReport(std::shared_ptr<const simulate::ValidationReport> report);  // nullptr: empty
  const simulate::ValidationReport* report() const { return report_.get(); }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const simulate::ValidationReport> report_;
};

// Sorts on ValidationTableModel::SortRole.
class ValidationSortProxy : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit ValidationSortProxy(QObject* parent = nullptr);
};

}  // namespace dayzero::gui
